"""A vault's index kept in step with its notes: where it lives, reindex, refresh after writes, recall."""

from __future__ import annotations

import time
from collections.abc import Iterable
from pathlib import Path

from memvault import paths
from memvault.config import Config
from memvault.errors import MemvaultError
from memvault.index import core as ix
from memvault.index import db, embed, sync
from memvault.recall import client
from memvault.recall import search as rc
from memvault.store import disk

REFRESH_EMBED_S = 0.5  # after a save: how long to spend embedding the new note through a warm service
REINDEX_LOCK = "reindex.lock"
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


class ServiceEmbedder:
    """The warm service seen as an `Embedder` (used by reindex when the service runs the configured model)."""

    def __init__(self, name: str, dim: int) -> None:
        self.name, self.dim = name, dim

    def encode(self, texts: list[str]) -> list[bytes]:
        reply = client.embed(texts, timeout=120)
        if reply is None or reply.model != self.name:
            raise embed.EmbeddingUnavailable("the embedding service stopped answering; run `memvault reindex` again")
        return reply.vectors


def service_embedder(config: Config) -> ServiceEmbedder | None:
    """The running service, if it runs the configured model."""
    info = client.status(timeout=1.0)
    wanted = embed.model_name(config.embedding.model)
    if info and info.get("model") == wanted and isinstance(info.get("dim"), int):
        return ServiceEmbedder(wanted, info["dim"])
    return None


def ensure_service(config: Config, *, wait: float = 0.0) -> dict[str, object] | None:
    """Start the warm service for the configured model if it is not running; optionally wait for it.

    A service running another model (the config changed) is stopped and replaced.
    """
    if not embed.available():
        return None  # keyword-only install: nothing to start, nothing to wait for
    wanted = embed.model_name(config.embedding.model)
    info = client.status(timeout=0.5)
    if info is not None and info.get("model") != wanted:
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
    lock_timeout: float = 600,
) -> sync.SyncReport:
    """Sync the index with the notes, then embed what is pending.

    `vectors`: "auto" uses the warm service when it runs the configured model and loads the model
    here otherwise; "service" only uses (and starts) the service, waiting up to a minute for it;
    "none" skips embedding (keyword side only).
    """
    import filelock

    started = time.monotonic()
    state = paths.ensure_private_dir(paths.vault_state_dir(root))
    try:
        lock = filelock.FileLock(str(state / REINDEX_LOCK), timeout=lock_timeout, mode=0o600)
        lock.acquire()
    except filelock.Timeout:
        raise MemvaultError("another reindex of this vault is still running", code="busy") from None
    try:
        index, warning = open_index(root, config)
        try:
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
        lock.release()


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


def refresh(root: Path, config: Config, rel_paths: Iterable[str]) -> str | None:
    """Bring just-written notes into the index: keywords at once, vectors if the service is warm.

    Returns a warning instead of raising: the write itself already succeeded and the index is derived.
    """
    wanted = list(rel_paths)
    try:
        index, _ = open_index(root, config)
        try:
            sync.sync(index, layout(root, config), only=wanted)
            embedder = service_embedder(config) if index.vector else None
            if embedder is not None:
                deadline = time.monotonic() + REFRESH_EMBED_S
                sync.embed_pending(index, embedder, deadline=deadline, first=wanted, batch_notes=8)
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
            with db.busy_timeout(index.conn, RECALL_SYNC_WAIT_MS):
                changed = sync.sync(index, layout(root, config))
                embedder = service_embedder(config) if index.vector and changed.pending else None
                if embedder is not None:  # a few just-edited notes; a big backlog is left to reindex
                    sync.embed_pending(index, embedder, deadline=time.monotonic() + REFRESH_EMBED_S)
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
