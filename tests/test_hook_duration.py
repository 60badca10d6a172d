"""A hook's time is what the user waits: counted from the process's start (interpreter and imports included)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from memvault import runtime
from memvault.claude.settings import INTERPRETER_FLAGS

from .conftest import REPO

HOOKS = REPO / "memvault" / "hooks"
FLAKY = "how do I fix a flaky test that fails only sometimes on CI?"
# Runs a hook script the way the host does, after spending `delay` seconds first: a slow interpreter
# start-up, as on a loaded machine. The hook's own code cannot see this time; the OS can.
LATE_START = (
    "import runpy, sys, time; time.sleep(float(sys.argv[1])); sys.argv = sys.argv[2:]; "
    "runpy.run_path(sys.argv[0], run_name='__main__')"
)


def run_late(hook: str, delay: float, payload: dict[str, object]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *INTERPRETER_FLAGS, "-c", LATE_START, str(delay), str(HOOKS / f"{hook}.py")],
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.skipif(sys.platform not in ("linux", "darwin", "win32"), reason="the OS gives no process start time")
def test_the_logged_duration_counts_from_the_process_start(memvault_home: Path) -> None:
    result = run_late("stop", 0.4, {"session_id": "late-1", "hook_event_name": "Stop"})
    assert result.returncode == 0, result.stderr
    [record] = list(runtime.read_log())
    assert record["hook"] == "Stop" and record["result"] == "skipped"  # no vault configured: nothing else to do
    assert record["duration_ms"] >= 400, record
    assert "duration_from" not in record  # the OS said when the process started


def test_the_prompt_budget_is_spent_by_a_slow_start(memvault_home: Path, vault_dir: Path, embedder) -> None:
    """A prompt hook whose interpreter took longer than most of the budget to start does not wait for vectors.

    With a 1500 ms budget and 1.2 s spent before the hook's code runs, at most 300 ms are left: too
    little to try the vector half (VECTOR_MIN_SHARE); counted from the hook's own start it would try.
    """
    from memvault import open_vault
    from memvault.index import sync
    from memvault.vault import indexing

    config = memvault_home / "config.yaml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(
        f"vault:\n  root: {vault_dir}\nembedding:\n  warm_service: false\nrecall:\n  prompt_budget_ms: 1500\n"
        "  min_coverage: 0.3\n  min_probability: 0.02\n",  # keyword-only: the floor lowered as in test_hooks.hook_vault
        encoding="utf-8",
    )
    vault = open_vault(vault_dir)
    index, _ = indexing.open_index(vault.root, vault.config)
    sync.sync(index, indexing.layout(vault.root, vault.config))
    assert sync.embed_pending(index, embedder) > 0
    index.close()

    result = run_late("user_prompt_submit", 1.2, {"session_id": "late-2", "prompt": FLAKY})
    assert result.returncode == 0, result.stderr
    assert "bisecting-flaky-tests.md" in json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"]
    [record] = list(runtime.read_log())
    assert record["mode"] == "keyword" and record["result"] == "partial"
    assert record["reason"] == "the budget was spent before recall (keyword-only)"
    assert record["duration_ms"] >= 1200


def test_the_start_a_tick_records_is_read_from_the_middle_of_that_tick() -> None:
    """/proc/<pid>/stat gives the start rounded down to a clock tick: read from the tick's start, every hook's
    logged duration was 0–10 ms too long (5 on average); from its middle it is right on average."""
    from memvault import proctime

    stat = b"4242 (python3 (a) b) S 1 4242 4242 0 -1 4194304 1 0 0 0 0 0 0 0 20 0 1 0 123456 0 0"
    assert proctime.age_from_stat(stat, 1234.600, 100) == pytest.approx(1234.600 - 1234.565)
    assert proctime.age_from_stat(stat, 1234.570, 100) == pytest.approx(0.005)  # half a tick, not 10 ms
