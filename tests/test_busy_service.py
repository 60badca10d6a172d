"""A busy embedding service (a reindex batch being encoded) never holds up a write or a recall."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from memvault import open_vault
from memvault.index import core as ix
from memvault.index import embed
from memvault.recall import client, service
from memvault.vault import indexing

from .conftest import EXAMPLE_VAULT

HAVE_MODEL = all(importlib.util.find_spec(name) for name in ("sentence_transformers", embed.DEFAULT_PACKAGE))
PARAGRAPH = (
    "The deploy pipeline builds the image, runs the migrations against a copy of production, waits for the "
    "health checks of the canary, then shifts traffic in four steps while the error budget is watched. "
)
# A reindex-sized batch: two requests of 256 long chunks, dozens of slices of the service's model.
BATCH = [f"{i}: " + PARAGRAPH * 4 for i in range(512)]


def test_turns_put_urgent_work_before_the_next_batch_slice() -> None:
    turns = service.Turns()
    order: list[str] = []
    holding, release = threading.Event(), threading.Event()

    def batch_slice(name: str, hold: bool = False) -> None:
        with turns.turn(urgent=False):
            order.append(name)
            if hold:
                holding.set()
                release.wait(10)

    def query() -> None:
        with turns.turn(urgent=True):
            order.append("query")

    first = threading.Thread(target=batch_slice, args=("slice 1", True))
    first.start()
    assert holding.wait(10)
    second = threading.Thread(target=batch_slice, args=("slice 2",))
    second.start()
    time.sleep(0.2)  # slice 2 waits for the model
    asked = threading.Thread(target=query)
    asked.start()
    time.sleep(0.2)  # and so does the query, which came later
    release.set()
    for thread in (first, second, asked):
        thread.join(10)
    assert order == ["slice 1", "query", "slice 2"]


@pytest.fixture(scope="module")
def warm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """One real service subprocess for the module; its MEMVAULT_HOME."""
    if not HAVE_MODEL:
        pytest.skip("the packaged embedding model is not installed")
    home = tmp_path_factory.mktemp("busy")
    env = {**{k: v for k, v in os.environ.items() if k != "MEMVAULT_SERVICE_TRANSPORT"}, "MEMVAULT_HOME": str(home)}
    with open(home / "spawned.log", "ab") as log:
        proc = subprocess.Popen([sys.executable, "-m", "memvault.recall.service", "--idle-minutes", "10"],
                                env=env, stdout=subprocess.DEVNULL, stderr=log)  # fmt: skip
    try:
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("MEMVAULT_HOME", str(home))
            assert client.wait_ready(180) is not None, (home / "spawned.log").read_text()
            assert client.query_vector("warm up", 60) is not None
        yield home
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("MEMVAULT_HOME", str(home))
            client.stop()
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(10)


@pytest.fixture
def busy(warm: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[threading.Thread]:
    """The service encoding a reindex-sized batch (in a thread) while the test runs."""
    monkeypatch.setenv("MEMVAULT_HOME", str(warm))
    done: list[object] = []
    thread = threading.Thread(target=lambda: done.append(client.embed(BATCH, timeout=900)), daemon=True)
    thread.start()
    time.sleep(1.0)  # the first slices are being encoded
    yield thread
    thread.join(900)
    assert done and done[0] is not None, "the batch itself must complete"


def test_a_query_is_answered_while_a_batch_is_still_being_encoded(busy: threading.Thread) -> None:
    vector = client.query_vector("how do we deploy", timeout=60)
    assert vector is not None
    assert busy.is_alive(), "the query waited for the whole batch"


def test_cli_recall_is_hybrid_while_a_reindex_batch_runs(busy: threading.Thread, tmp_path: Path) -> None:
    root = tmp_path / "vault"
    shutil.copytree(EXAMPLE_VAULT, root)
    vault = open_vault(root)
    vault.reindex(vectors="local")
    result = vault.recall("a test that fails only sometimes", wait_service=5)
    assert busy.is_alive()
    assert result.mode == "hybrid" and any(h.vec_score > 0 for h in result.hits), result.reason


def test_a_save_lands_while_the_service_is_busy_and_its_vectors_follow(busy: threading.Thread, tmp_path: Path) -> None:
    root = tmp_path / "vault"
    shutil.copytree(EXAMPLE_VAULT, root)
    vault = open_vault(root)
    vault.reindex(vectors="none")
    started = time.monotonic()
    saved = vault.save("fix", "quokka-cache", "Flush the quokka cache after every deploy.")
    assert busy.is_alive(), "the save waited for the batch"
    assert time.monotonic() - started < indexing.SERVICE_BATCH_S  # the old client waited up to this long
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        index = ix.open_reader(vault.index_file)
        try:
            (embedded,) = index.conn.execute("SELECT embedded FROM notes WHERE path = ?", (saved.path,)).fetchone()
        finally:
            index.close()
        if embedded:
            break
        time.sleep(0.5)
    assert embedded == embed.DEFAULT_NAME


def test_pending_notes_are_caught_up_by_the_service_in_the_background(
    warm: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMVAULT_HOME", str(warm))
    root = tmp_path / "vault"
    shutil.copytree(EXAMPLE_VAULT, root)
    vault = open_vault(root)
    vault.reindex(vectors="none")  # keywords only: every note waits for vectors
    lock = indexing.paths.vault_state_dir(root) / indexing.REINDEX_LOCK
    assert client.catch_up(str(vault.index_file), str(lock), timeout=5)
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        index = ix.open_reader(vault.index_file)
        try:
            left = index.pending_count()
        finally:
            index.close()
        if left == 0:
            break
        time.sleep(0.5)
    assert left == 0
    assert vault.recall("a test that fails only sometimes").mode == "hybrid"
