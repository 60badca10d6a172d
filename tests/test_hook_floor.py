"""The prompt hook's floor (`scripts/hook_floor.py`, run by `bench_hooks.py`) measures the work it names."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from memvault import open_vault
from memvault.index import chunking, sync
from memvault.recall import search
from memvault.vault import indexing

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts"))
import hook_floor  # noqa: E402

from .conftest import EXAMPLE_VAULT  # noqa: E402

PROMPT = "how do we roll back a failed deploy"


def test_the_hand_over_round_trips_the_event_through_a_unix_socket() -> None:
    payload = json.dumps({"prompt": PROMPT})
    figures = hook_floor.handover(dict(os.environ), 3, [payload])
    assert set(figures) == {"p50", "p95", "ratio_p50", "ratio_p95"}
    assert 0 < figures["p50"] <= figures["p95"] and figures["ratio_p50"] > 0


def test_the_keyword_floor_runs_the_keyword_sides_query_in_a_bare_process(tmp_path: Path) -> None:
    root = tmp_path / "vault"
    shutil.copytree(EXAMPLE_VAULT, root)
    vault = open_vault(root)
    index, _ = indexing.open_index(vault.root, vault.config)
    sync.sync(index, indexing.layout(vault.root, vault.config))
    terms = chunking.query_terms(PROMPT)
    top = ("SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ? "
           f"ORDER BY bm25(chunks_fts, {search.BM25_WEIGHTS}) LIMIT 300")  # fmt: skip
    expected = len(index.conn.execute(top, (chunking.fts_query(terms),)).fetchall())
    assert expected > 0  # the prompt's words are in the example vault: the floor's query has rows to read

    command = hook_floor.keyword_command(index.path, PROMPT)
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    assert int(done.stdout) == expected  # the same rows as the keyword side's FTS5 query, read by a bare process

    figures = hook_floor.keyword(dict(os.environ), 2, index.path, [PROMPT])
    assert 0 < figures["p50"] <= figures["p95"]
