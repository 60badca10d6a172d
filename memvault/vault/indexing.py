"""A vault's index kept in step with its notes: where it lives, reindex, refresh after writes, recall."""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from memvault import paths, userfiles
from memvault.config import Config
from memvault.errors import MemvaultError
from memvault.index import core as ix
from memvault.index import db, embed, sync
from memvault.recall import client
from memvault.recall import search as rc
from memvault.store import disk

REFRESH_EMBED_S = 0.5  # after a save: how long to spend embedding the new note through a warm service
REINDEX_LOCK = "reindex.lock"
REINDEX_OWNER = "reindex.json"  # who holds the reindex lock, for the message a second reindex prints at once


class ReindexBusy(MemvaultError):
    """Another reindex of this vault is running."""

    code = "busy"


RECALL_SYNC_WAIT_MS = 250  # recall waits this long for another process's index write, then answers without syncing
BUSY_NOTE = "another process is writing the index: answered from what it holds (edits since may be missing)"


def index_file(root: Path, config: Config) -> Path:
    return paths.index_file(root, config.vault.folder.strip("/"), config.index.location)


def layout(root: Path, config: Config) -> sync.Layout:
    return sync.Layout(root, config.vault.folder.strip("/"), disk.ignore_patterns(root, config.vault.ignore))


def open_index(root: Path, config: Config) -> tuple[ix.Index, str | None]:
    """The index for writing (a damaged one is rebuilt); without sqlite-vec it opens keyword-only with a warning."""
    path = index_file(root, config)
    try:
        return ix.open_index(path, rebuild=True), None
    except db.VectorUnavailable as exc:
        return ix.open_index(path, vector=False, rebuild=True), str(exc)


SERVICE_BATCH_S = 120  # a reindex batch through the service may take this long on a slow, busy machine


class ServiceEmbedder:
    """The warm service seen as an `Embedder` (used by reindex when the service runs the configured model).

    With a `deadline` (a time.monotonic() value) no call outlasts it: a write's refresh gives up in time.
    """

    def __init__(self, name: str, dim: int, deadline: float | None = None) -> None:
        self.name, self.dim, self.deadline = name, dim, deadline

    def encode(self, texts: list[str]) -> list[bytes]:
        timeout = SERVICE_BATCH_S if self.deadline is None else min(SERVICE_BATCH_S, self.deadline - time.monotonic())
        reply = client.embed(texts, timeout=timeout) if timeout > 0 else None
        if reply is None or reply.model != self.name:
            late = self.deadline is not None and time.monotonic() >= self.deadline
            raise embed.EmbeddingUnavailable(
                "the embedding service did not answer in time" if late
                else "the embedding service stopped answering; run `memvault reindex` again"
            )  # fmt: skip
        return reply.vectors


def service_embedder(config: Config, *, deadline: float | None = None) -> ServiceEmbedder | None:
    """The running service, if it runs the configured model (asked within a second, or by `deadline`)."""
    timeout = 1.0 if deadline is None else max(0.05, deadline - time.monotonic())
    info = client.status(timeout=timeout)
    wanted = embed.model_name(config.embedding.model)
    if info and info.get("model") == wanted and isinstance(info.get("dim"), int):
        return ServiceEmbedder(wanted, info["dim"], deadline)
    return None


def _embed_soon(root: Path, config: Config, index: ix.Index, first: list[str] | None = None) -> None:
    """Embed pending notes through the warm service within REFRESH_EMBED_S, never longer; what is left
    (the service is busy with another reindex, or slow) is handed to the service to embed in the background."""
    deadline = time.monotonic() + REFRESH_EMBED_S
    embedder = service_embedder(config, deadline=deadline) if index.vector else None
    if embedder is None:
        return
    with contextlib.suppress(embed.EmbeddingUnavailable):
        sync.embed_pending(index, embedder, deadline=deadline, first=first or (), batch_notes=8)
    if index.has_pending():
        state = paths.vault_state_dir(root)
        client.catch_up(str(index_file(root, config)), str(state / REINDEX_LOCK))


def ensure_service(config: Config, *, wait: float = 0.0) -> dict[str, object] | None:
    """Start the warm service for the configured model if it is not running; optionally wait for it.

    A service running another model (the config changed), or started by another memvault (its requests' protocol
    differs: an upgrade while it ran), is stopped and replaced.
    """
    if not embed.available():
        return None  # keyword-only install: nothing to start, nothing to wait for
    wanted = embed.model_name(config.embedding.model)
    info = client.status(timeout=0.5)
    if info is not None and (info.get("model") != wanted or info.get("protocol") != client.PROTOCOL):
        client.stop()
        info = None
    if info is None:
        client.start(config.embedding.model, config.embedding.service_idle_minutes)
        if wait > 0:
            info = client.wait_ready(wait)
    return info


def reindex(
    root: Path,
    config: Config,
    *,
    full: bool = False,
    vectors: str = "auto",
    progress: sync.Progress | None = None,
    wait: float = 0.0,
    on_wait: Callable[[str], None] | None = None,
) -> sync.SyncReport:
    """Sync the index with the notes, then embed what is pending.

    `vectors`: "auto" uses the warm service when it runs the configured model and loads the model
    here otherwise; "service" only uses (and starts) the service, waiting up to a minute for it;
    "none" skips embedding (keyword side only). When another reindex of the vault runs, `ReindexBusy`
    is raised at once, or, with `wait` > 0, `on_wait(who)` is told and that many seconds are waited.
    """
    import filelock

    state = paths.ensure_private_dir(paths.vault_state_dir(root))
    lock = filelock.FileLock(str(state / REINDEX_LOCK), mode=0o600)
    try:
        lock.acquire(timeout=0)
    except filelock.Timeout:
        who = running_reindex(root)
        if wait <= 0:
            raise ReindexBusy(f"another reindex of this vault is running ({who})") from None
        if on_wait:
            on_wait(who)
        try:
            lock.acquire(timeout=wait)
        except filelock.Timeout:
            raise ReindexBusy(f"another reindex of this vault is still running after {wait:g}s ({who})") from None
    started = time.monotonic()
    owner = state / REINDEX_OWNER
    with contextlib.suppress(OSError):
        userfiles.replace(owner, json.dumps({"pid": os.getpid(), "since": time.time()}))  # user-only (0600) from birth
    try:
        index, warning = open_index(root, config)
        try:
            with _telling_service(index):
                if full:
                    index.clear()
                report = sync.sync(index, layout(root, config), progress=progress)
                if warning:
                    report.warnings.append(warning)
                space = index.vector_model()
                model_changed = space is not None and space[0] != embed.model_name(config.embedding.model)
                if index.vector and vectors != "none" and (index.pending_count() or model_changed):
                    embedder = _embedder(config, vectors, report)
                    if embedder is not None:
                        report.embedded = sync.embed_pending(index, embedder, progress=progress)
                        report.model = embedder.name
            report.pending = index.pending_count()
            report.model = report.model or (index.vector_model() or (None, 0))[0]
            report.seconds = time.monotonic() - started
            return report
        finally:
            index.close()
    finally:
        with contextlib.suppress(OSError):
            owner.unlink()
        lock.release()


def _reindexing(root: Path) -> bool:
    """Whether a reindex of this vault holds its lock right now."""
    import filelock

    lock = filelock.FileLock(str(paths.ensure_private_dir(paths.vault_state_dir(root)) / REINDEX_LOCK), mode=0o600)
    try:
        lock.acquire(timeout=0)
    except (filelock.Timeout, OSError):
        return True
    lock.release()
    return False


def running_reindex(root: Path) -> str:
    """Who runs the reindex that holds this vault's lock, as words ("pid 4242, for 3 min")."""
    try:
        data = json.loads((paths.vault_state_dir(root) / REINDEX_OWNER).read_text(encoding="utf-8"))
        pid, minutes = int(data["pid"]), max(0.0, time.time() - float(data["since"])) / 60
        return f"pid {pid}, for {minutes:.0f} min" if minutes >= 1 else f"pid {pid}, just started"
    except (OSError, ValueError, KeyError, TypeError):
        return "started by another process"


def _embedder(config: Config, vectors: str, report: sync.SyncReport) -> sync.Embedder | None:
    found = service_embedder(config)
    if found is not None or vectors == "local":
        return found or embed.load(config.embedding.model)
    if vectors == "service":
        ensure_service(config, wait=60)
        found = service_embedder(config)
        if found is None:
            report.warnings.append("the embedding service did not start; vectors will be added on the next reindex")
        return found
    try:
        return embed.load(config.embedding.model)
    except embed.EmbeddingUnavailable as exc:
        report.warnings.append(f"{exc}; recall stays keyword-only")
        return None


@contextlib.contextmanager
def _telling_service(index: ix.Index) -> Iterator[None]:
    """Around a write of the index: when it changed the vectors (`vectors_version`), a running warm service is told,
    so its in-memory copy reloads now rather than when the next prompt finds it stale."""
    before = index.vectors_version()
    try:
        yield
    finally:
        with contextlib.suppress(db.dbapi().Error):  # (never in place of the block's own error)
            if index.vectors_version() != before:
                client.vectors_changed(str(index.path))


def refresh(root: Path, config: Config, rel_paths: Iterable[str]) -> str | None:
    """Bring just-written notes into the index: keywords at once, vectors if the service is warm.

    Returns a warning instead of raising: the write itself already succeeded and the index is derived.
    """
    wanted = list(rel_paths)
    try:
        index, _ = open_index(root, config)
        try:
            with _telling_service(index):
                sync.sync(index, layout(root, config), only=wanted)
                _embed_soon(root, config, index, wanted)  # the write has landed: its vectors follow
        finally:
            index.close()
    except (MemvaultError, db.dbapi().Error, OSError) as exc:
        return f"saved, but the index was not updated ({exc}); the next reindex will catch up"
    return None


def recall(root: Path, config: Config, query: str, options: rc.Options, *, wait_service: float = 0.0) -> rc.Result:
    """Recall for a person or a script: notes changed on disk are synced first, and the warm service
    may be started and waited for (`wait_service` seconds); then the index is queried.
    """
    if wait_service > 0:
        ensure_service(config, wait=wait_service)
    try:
        index, _ = open_index(root, config)
    except db.dbapi().OperationalError as exc:  # a migration waits for a writer: read what is there
        if not db.is_busy(exc):
            raise
        return _busy(rc.recall_file(index_file(root, config), query, options, client.query_vector))
    busy = False
    try:
        try:  # a writer (a reindex, another save) may hold the lock for long: never wait for it here
            with db.busy_timeout(index.conn, RECALL_SYNC_WAIT_MS), _telling_service(index):
                changed = sync.sync(index, layout(root, config))
                if changed.pending and not _reindexing(root):  # a few just-edited notes; a running reindex embeds them
                    _embed_soon(root, config, index)
        except db.dbapi().OperationalError as exc:
            if not db.is_busy(exc):
                raise
            busy = True
        result = rc.recall(index, query, options, client.query_vector)
        return _busy(result) if busy else result
    finally:
        index.close()


def _busy(result: rc.Result) -> rc.Result:
    result.partial = True
    result.reason = BUSY_NOTE + (f"; {result.reason}" if result.reason else "")
    return result
