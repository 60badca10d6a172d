"""The machine's team state beside the vault's: queued publishes (the outbox), what was published, the pull cursor.

All of it lives in the vault's per-machine state folder (`<state>/team/`), never in the vault, user-only,
each file replaced atomically and synced (`store.disk.atomic_write`):

- `outbox/<uid>.json`: one entry that passed the envelope and waits to be sent. It is written BEFORE the
  first attempt and removed only after the server confirmed, so a publish while the server is down, or a
  process killed mid-publish, goes out on the next `publish`, `push`, `pull` or session start. Sending twice
  is harmless: the server keys an entry by its uid, made here;
- `published.json`: which note went out as which entry (uid, version), so publishing the same note again
  proposes a new version of the same entry;
- `pull.json`: the pull cursor (the server's change sequence reached), when the last pull ran, how it ended;
- `conflicts.json`: pushes the server refused because someone else's version came first, kept until resolved.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from memvault import paths
from memvault.store import disk

from .envelope import Outgoing


class TeamState:
    """The team files of one vault on this machine."""

    def __init__(self, vault_root: Path) -> None:
        self.dir = paths.vault_state_dir(vault_root) / "team"
        self.outbox_dir = self.dir / "outbox"

    # ---- the outbox ------------------------------------------------------------------------

    def queue(self, entry: Outgoing) -> Path:
        """Journal `entry` before it is sent (replacing an older queued version of the same uid)."""
        paths.ensure_private_dir(self.outbox_dir)
        path = self.outbox_dir / f"{entry.uid}.json"
        record = {"queued_at": time.time(), "entry": entry.to_json()}
        disk.atomic_write(path, json.dumps(record, ensure_ascii=False).encode(), private=True)
        return path

    def queued(self) -> list[Outgoing]:
        """Entries waiting to be sent, oldest first; an unreadable record is skipped (and kept for a look)."""
        found: list[tuple[float, Outgoing]] = []
        if not self.outbox_dir.is_dir():
            return []
        for path in self.outbox_dir.glob("*.json"):
            try:
                record = json.loads(path.read_text(encoding="utf-8"))
                found.append((float(record["queued_at"]), Outgoing.from_json(record["entry"])))
            except (OSError, ValueError, KeyError, TypeError):
                continue
        return [entry for _, entry in sorted(found, key=lambda pair: pair[0])]

    def sent(self, uid: str) -> None:
        """The server confirmed `uid`: take it out of the outbox."""
        path = self.outbox_dir / f"{uid}.json"
        if path.exists():
            disk.remove(path)

    # ---- small JSON records ----------------------------------------------------------------

    def _read(self, name: str) -> dict[str, Any]:
        try:
            data = json.loads((self.dir / name).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def _write(self, name: str, data: dict[str, Any]) -> None:
        paths.ensure_private_dir(self.dir)
        disk.atomic_write(self.dir / name, json.dumps(data, ensure_ascii=False, indent=1).encode(), private=True)

    def published(self) -> dict[str, dict[str, Any]]:
        """Note path → {uid, version, team, scope} for every note this machine published."""
        return self._read("published.json")

    def record_published(self, source_path: str, uid: str, version: int, team: str | None, scope: str) -> None:
        data = self.published()
        data[source_path] = {"uid": uid, "version": version, "team": team, "scope": scope}
        self._write("published.json", data)

    def pull_state(self) -> dict[str, Any]:
        """{cursor, last_attempt, last_success, error, pulled} of the last pull (empty before the first)."""
        return self._read("pull.json")

    def record_pull(
        self,
        *,
        cursor: int | None,
        error: str | None,
        pulled: int = 0,
        mirror: str = "",
        teams: list[str] | None = None,
    ) -> None:
        data = self.pull_state()
        if teams is not None:  # the member's teams the cursor covers (a team joined later is pulled from the start)
            data["teams"] = teams
        now = time.time()
        data["last_attempt"] = now
        data["error"] = error
        if error is None:
            data.update(last_success=now, pulled=pulled)
        if cursor is not None:
            data["cursor"] = cursor
        if mirror:
            data["mirror"] = mirror
        self._write("pull.json", data)

    def conflicts(self) -> dict[str, dict[str, Any]]:
        """Mirror path → {uid, base_version, server_version, copy} of pushes that met a newer version."""
        return self._read("conflicts.json")

    def record_conflict(self, rel: str, info: dict[str, Any] | None) -> None:
        data = self.conflicts()
        if info is None:
            data.pop(rel, None)
        else:
            data[rel] = info
        self._write("conflicts.json", data)


def age(seconds_since_epoch: float | None) -> str:
    """How long ago, in words people read ("3 min ago"); "never" for None."""
    if not seconds_since_epoch:
        return "never"
    gone = max(0.0, time.time() - seconds_since_epoch)
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if gone >= size:
            return f"{int(gone // size)} {unit} ago"
    return f"{int(gone)} s ago"
