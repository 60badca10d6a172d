"""The tutorial's example session (examples/transcripts/) still yields the captures the tutorial shows."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from memvault import open_vault
from memvault.reflect import runner

from .conftest import REPO

TRANSCRIPT = REPO / "examples" / "transcripts" / "billing-webhook-retries.jsonl"
P = "MemoryVault/personal-private/"


@pytest.fixture(autouse=True)
def no_service(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runner, "WAIT_SERVICE_S", 0.0)


def test_tutorial_transcript_saves_one_queues_one_and_inboxes_one(tmp_path: Path) -> None:
    root = tmp_path / "Obsidian"
    (root / "Projects").mkdir(parents=True)
    shutil.copy(REPO / "examples" / "vault" / "Projects" / "Billing service.md", root / "Projects")
    (root / "MemoryVault").mkdir()
    vault = open_vault(root)

    report = runner.reflect_transcript(vault, TRANSCRIPT)
    assert (report.turns, report.candidates) == (9, 3)  # user and assistant turns; tool calls are not counted
    assert [(r["action"], r["confidence"]) for r in report.routes] == [
        ("save", "high"),
        ("review", "medium"),
        ("inbox", "low"),
    ]
    assert report.written == [
        P + "preference/never-run-pip-in-this-repo-add-dependencies-with-uv-add-so.md",
        P + "_review/fix-modulenotfounderror-no-module-named-respx.md",
        P + "_inbox/use-httpx-for-the-http-calls-in-the-new-dunning-client-too.md",
    ]
    saved = vault.read(report.written[0]).note.meta
    assert (saved["rule"], saved["source"]) == ("from-now-on", "5d1c0e2a-8f3b-4c1e-9a7d-2b6f0e4c9a11")

    again = runner.reflect_transcript(vault, TRANSCRIPT)
    assert (again.turns, again.written) == (0, [])
