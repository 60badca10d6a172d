"""reflect: real transcripts and hand-written ones through the real miner, router and vault."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import ClassVar

import filelock
import pytest

from memvault import open_vault
from memvault.reflect import runner
from memvault.vault.core import Vault

from .conftest import TRANSCRIPTS, snapshot

P = "MemoryVault/personal-private/"


@pytest.fixture(autouse=True)
def no_service(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests never start the real embedding service; the ones that need vectors give a local model."""
    monkeypatch.setattr(runner, "WAIT_SERVICE_S", 0.0)


def write_transcript(path: Path, session: str, turns: list[tuple[str, str]], *, append: bool = False) -> Path:
    """Claude Code JSONL: user prompts as strings, assistant replies as text blocks."""
    lines = []
    start = dt.datetime.now(dt.timezone.utc)  # said now: later than any entry already in the vault
    for n, (role, text) in enumerate(turns):
        stamp = (start + dt.timedelta(seconds=n)).isoformat().replace("+00:00", "Z")
        base = {"uuid": f"{session}-{n}-{len(text)}", "timestamp": stamp, "sessionId": session, "cwd": "/home/u/p",
                "isSidechain": False, "type": role}  # fmt: skip
        if role == "user":
            base["message"] = {"role": "user", "content": text}
        else:
            base["message"] = {"id": f"msg-{n}-{len(text)}", "role": "assistant", "type": "message",
                               "content": [{"type": "text", "text": text}]}  # fmt: skip
        lines.append(json.dumps(base))
    with path.open("a" if append else "w", encoding="utf-8") as fh:
        fh.write("\n".join(lines) + "\n")
    return path


ASK = ("user", "Set up the project environment please.")
PIP = ("assistant", "I created a virtualenv with pip and installed the requirements.")
UV = ("user", "From now on, always name branches after the ticket number.")
OK = ("assistant", "Understood, I will do that from now on.")


def captured(vault: Vault) -> dict[str, bytes]:
    """Entries reflection may have written: everything under MemoryVault/ but the change log (MemoryVault/_meta/)."""
    return {p: b for p, b in snapshot(vault.root).items() if p.startswith("MemoryVault/") and "/_meta/" not in p}


def test_real_transcripts_no_crash_provenance_and_second_pass_adds_nothing(vault: Vault) -> None:
    before = captured(vault)
    n = len(runner.corpus_files(TRANSCRIPTS))  # 14 real transcripts, 4 excerpts of real interactive sessions
    first = runner.reflect_corpus(vault, TRANSCRIPTS)
    assert first.files == n == 18 and not first.errors and not first.halted
    assert first.reflected == n and first.written, "the real transcripts hold at least a few captures"
    for rel in first.written:
        meta = vault.read(rel).note.meta
        assert meta["source"] and meta["confidence"] in ("high", "medium", "low") and meta["rule"]
        assert meta["route"] in ("saved", "review", "inbox", "idea") and meta["captured"] and meta["evidence"]
        assert all(ref.startswith("L") for ref in meta["evidence"])
    after_first = captured(vault)
    assert set(after_first) - set(before) == set(first.written)
    second = runner.reflect_corpus(vault, TRANSCRIPTS)
    assert second.written == [] and second.unchanged == n and captured(vault) == after_first
    # Even with the cursors forgotten, the per-transcript records and duplicate detection add nothing.
    for state in (vault.state_dir / "reflect" / "transcripts").glob("*.json"):
        data = json.loads(state.read_text())
        state.write_text(json.dumps({"keys": data["keys"]}))
    third = runner.reflect_corpus(vault, TRANSCRIPTS)
    assert third.written == [] and third.reflected == n and captured(vault) == after_first
    assert runner.last_run(vault) is not None


def test_high_confidence_preference_is_saved_with_provenance(vault: Vault, tmp_path: Path) -> None:
    path = write_transcript(tmp_path / "s1.jsonl", "sess-1", [ASK, PIP, UV, OK])
    report = runner.reflect_transcript(vault, path)
    assert report.session_id == "sess-1" and report.turns == 4
    (route,) = [r for r in report.routes if r["category"] == "preference"]
    assert route["action"] == "save" and route["confidence"] == "high"
    nf = vault.read(route["path"])
    assert route["path"].startswith(P + "preference/")
    assert nf.note.meta["source"] == "sess-1" and nf.note.meta["route"] == "saved"
    assert nf.note.meta["evidence"] == ["L3"] and nf.note.meta["rule"]
    assert "always name branches after the ticket number" in nf.note.body
    assert runner.pending_bytes(vault, path) == 0
    again = runner.reflect_transcript(vault, path)
    assert again.turns == 0 and again.written == []


def test_incremental_only_the_appended_part_is_mined(vault: Vault, tmp_path: Path) -> None:
    path = write_transcript(tmp_path / "s1.jsonl", "sess-1", [ASK, PIP, UV, OK])
    first = runner.reflect_transcript(vault, path)
    assert len(first.written) == 1
    write_transcript(path, "sess-1", [("user", "Never add emojis to commit messages."), OK], append=True)
    assert runner.pending_bytes(vault, path) > 0
    second = runner.reflect_transcript(vault, path)
    assert second.turns == 2
    assert [r["title"] for r in second.routes] == ["Never add emojis to commit messages"]
    assert len(second.written) == 1 and second.written[0] != first.written[0]
    assert runner.pending_bytes(vault, path) == 0


def test_an_incomplete_last_line_waits_until_it_is_complete(vault: Vault, tmp_path: Path) -> None:
    path = write_transcript(tmp_path / "s1.jsonl", "sess-1", [ASK, PIP])
    full = json.dumps({"type": "user", "sessionId": "sess-1", "uuid": "u9", "timestamp": "2026-11-20T11:00:00Z",
                       "message": {"role": "user", "content": "Always write SQL keywords in upper case."}})  # fmt: skip
    with path.open("a") as fh:
        fh.write(full[:40])
    assert runner.reflect_transcript(vault, path).written == []
    assert runner.pending_bytes(vault, path) == 40
    with path.open("a") as fh:
        fh.write(full[40:] + "\n")
    report = runner.reflect_transcript(vault, path)
    assert [r["title"] for r in report.routes] == ["Always write SQL keywords in upper case"]


def test_private_spans_and_secrets_never_reach_the_vault_or_the_state(vault: Vault, tmp_path: Path) -> None:
    token = "ghp_" + "abcdefghijklmnopqrstuvwxyz0123456789"
    path = write_transcript(tmp_path / "s1.jsonl", "sess-1", [
        ASK, PIP,
        ("user", "Always deploy through <private>bastion-7.corp.internal</private> the VPN gateway."), OK,
        ("user", f"Remember that the staging token is {token} and always export it as GITHUB_TOKEN."), OK,
    ])  # fmt: skip
    report = runner.reflect_transcript(vault, path)
    assert report.written and report.candidates >= 1
    assert any("VPN gateway" in vault.read(p).note.body for p in report.written)
    everything = b"".join(captured(vault).values()) + b"".join(
        p.read_bytes() for p in (vault.state_dir / "reflect").rglob("*.json")
    )
    assert b"bastion-7" not in everything and token.encode() not in everything
    assert token[4:20].encode() not in everything  # not even inside a key or a slug


def test_reflection_redacts_what_a_miner_let_through(vault: Vault, tmp_path: Path, monkeypatch) -> None:
    """Whatever a miner returns (the LLM miner is not ours to trust), secrets and private spans are removed."""
    from memvault.reflect import miner

    token = "ghp_" + "abcdefghijklmnopqrstuvwxyz0123456789"
    leaky = miner.Candidate(
        category="fix", title=f"Export {token}", body=f"Run `export GH_TOKEN={token}` <private>on bastion-7</private>",
        evidence=("L3",), confidence="high", rule="test", key=f"fix:export-{token}",
    )  # fmt: skip
    monkeypatch.setattr(miner, "run", lambda turns, settings=None, **kw: ([leaky], miner.MinerRun("offline", "test")))
    report = runner.reflect_transcript(vault, write_transcript(tmp_path / "s.jsonl", "sess-1", [ASK, PIP, UV, OK]))
    (path,) = report.written
    nf = vault.read(path)
    assert "[REDACTED:" in nf.note.body and nf.note.meta["reflect_key"].startswith("fix:redacted-")
    assert any("redacted" in n for n in report.notes)
    everything = b"".join(captured(vault).values()) + b"".join(
        p.read_bytes() for p in (vault.state_dir / "reflect").rglob("*.json")
    )
    assert token[4:20].encode() not in everything and b"bastion-7" not in everything


def test_stop_file_halts_before_starting_and_between_candidates(
    vault: Vault, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write_transcript(tmp_path / "s1.jsonl", "sess-1", [
        ASK, PIP, UV, OK, ("user", "Never add emojis to commit messages."), OK,
    ])  # fmt: skip
    runner.stop_file().parent.mkdir(parents=True, exist_ok=True)
    runner.stop_file().touch()
    before = captured(vault)
    halted = runner.reflect_transcript(vault, path)
    assert halted.halted and halted.written == [] and captured(vault) == before
    assert runner.pending_bytes(vault, path) == path.stat().st_size and runner.last_run(vault) is None
    runner.stop_file().unlink()
    # The STOP file appears while the first candidate is written: the second one waits.
    real_save = Vault.save

    def save_then_stop(self: Vault, *args, **kwargs):
        result = real_save(self, *args, **kwargs)
        runner.stop_file().touch()
        return result

    monkeypatch.setattr(Vault, "save", save_then_stop)
    partial = runner.reflect_transcript(vault, path)
    assert partial.halted and len(partial.written) == 1 and runner.pending_bytes(vault, path) > 0
    monkeypatch.setattr(Vault, "save", real_save)
    runner.stop_file().unlink()
    rest = runner.reflect_transcript(vault, path)
    assert not rest.halted and len(rest.written) == 1 and rest.written != partial.written
    assert runner.pending_bytes(vault, path) == 0


def test_a_pass_that_fails_midway_keeps_what_it_wrote_and_resumes(
    vault: Vault, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memvault.errors import VaultBusy

    path = write_transcript(tmp_path / "s1.jsonl", "sess-1", [
        ASK, PIP, UV, OK, ("user", "Never add emojis to commit messages."), OK,
    ])  # fmt: skip
    real_save, calls = Vault.save, []

    def busy_on_second(self: Vault, *args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise VaultBusy("another memvault process has held the vault lock")
        return real_save(self, *args, **kwargs)

    monkeypatch.setattr(Vault, "save", busy_on_second)
    with pytest.raises(VaultBusy):
        runner.reflect_transcript(vault, path)
    monkeypatch.setattr(Vault, "save", real_save)
    assert runner.pending_bytes(vault, path) == path.stat().st_size
    rest = runner.reflect_transcript(vault, path)
    assert [r["title"] for r in rest.routes] == ["Never add emojis to commit messages"] and len(rest.written) == 1
    assert len(list((vault.root / P / "preference").glob("*branches*.md"))) == 1


def test_dry_run_writes_nothing_anywhere(vault: Vault, tmp_path: Path) -> None:
    path = write_transcript(tmp_path / "s1.jsonl", "sess-1", [ASK, PIP, UV, OK])
    vault_before = snapshot(vault.root)
    report = runner.reflect_transcript(vault, path, dry_run=True)
    assert report.dry_run and report.written == [] and report.routes[0]["path"].startswith(P + "preference/")
    assert snapshot(vault.root) == vault_before
    assert not (vault.state_dir / "reflect" / "transcripts").exists() and runner.last_run(vault) is None
    assert runner.pending_bytes(vault, path) == path.stat().st_size
    assert runner.reflect_transcript(vault, path).written  # the real pass still does the work


def test_same_statement_in_a_second_session_is_a_duplicate(vault: Vault, tmp_path: Path) -> None:
    one = runner.reflect_transcript(vault, write_transcript(tmp_path / "a.jsonl", "sess-a", [ASK, PIP, UV, OK]))
    two = runner.reflect_transcript(vault, write_transcript(tmp_path / "b.jsonl", "sess-b", [ASK, PIP, UV, OK]))
    assert len(one.written) == 1 and two.written == []
    (route,) = two.routes
    assert route["action"] == "duplicate" and route["target"] == one.written[0] and route["sessions"] == 2


def test_the_same_rule_in_other_words_in_another_session_is_the_same_capture(vault: Vault, tmp_path: Path) -> None:
    """Two real sessions of one user: "be careful to not lose my progress …", then "do not lose my data"."""
    one = runner.reflect_transcript(vault, TRANSCRIPTS / "charming-with-claude/58b4f056-excerpt.jsonl")
    two = runner.reflect_transcript(vault, TRANSCRIPTS / "charming-with-claude/e7e9024b-excerpt.jsonl")
    (first,) = one.written
    (route,) = two.routes
    assert route["key"] != one.routes[0]["key"]  # other words, another key …
    assert route["action"] == "duplicate" and route["target"] == first and route["sessions"] == 2  # … the same rule


def test_low_confidence_seen_in_three_sessions_moves_from_inbox_to_review(vault: Vault, tmp_path: Path) -> None:
    said = [ASK, PIP, ("user", "Don't add emojis to commit messages."), OK]
    actions, paths = [], []
    for n in range(3):
        report = runner.reflect_transcript(vault, write_transcript(tmp_path / f"{n}.jsonl", f"sess-{n}", said))
        (route,) = report.routes
        actions.append(route["action"])
        paths.append(route.get("path"))
    assert actions == ["inbox", "duplicate", "promote"]
    assert "/_inbox/" in paths[0] and "/_review/" in paths[2]
    assert not (vault.root / paths[0]).exists()
    meta = vault.read(paths[2]).note.meta
    assert meta["route"] == "review" and meta["seen_in_sessions"] == 3


def test_ideas_become_incubator_notes_once(vault: Vault, tmp_path: Path) -> None:
    said = [ASK, PIP, ("user", "We should also add a flaky test detector to CI later."), OK]
    report = runner.reflect_transcript(vault, write_transcript(tmp_path / "a.jsonl", "sess-a", said))
    (path,) = report.written
    assert path.startswith(P + "_idea-incubator/") and path.endswith("/_index.md")
    meta = vault.read(path).note.meta
    assert meta["kind"] == "idea" and meta["status"] == "incubating" and meta["surfaced_in_session"] == "sess-a"
    again = runner.reflect_transcript(vault, write_transcript(tmp_path / "b.jsonl", "sess-b", said))
    assert again.written == [] and again.routes[0]["action"] == "duplicate"


def test_a_second_reflection_waits_for_the_lock_then_reports_busy(
    vault: Vault, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write_transcript(tmp_path / "s1.jsonl", "sess-1", [ASK, PIP, UV, OK])
    monkeypatch.setattr(runner, "LOCK_WAIT_S", 0.2)
    folder = vault.state_dir / "reflect"
    folder.mkdir(parents=True, exist_ok=True)
    with filelock.FileLock(str(folder / "reflect.lock")):
        report = runner.reflect_transcript(vault, path)
    assert report.busy and report.written == [] and runner.pending_bytes(vault, path) > 0


def test_corpus_pass_interrupted_then_resumed_finishes_without_duplicates(vault_dir: Path, tmp_path: Path) -> None:
    corpus = tmp_path / "projects"
    (corpus / "p").mkdir(parents=True)
    statements = ["Always name branches after the ticket number.", "Never add emojis to commit messages.",
                  "Always write SQL keywords in upper case."]  # fmt: skip
    for n, said in enumerate(statements):
        write_transcript(corpus / "p" / f"{n}.jsonl", f"sess-{n}", [ASK, PIP, ("user", said), OK])
    vault = open_vault(vault_dir)
    calls = []

    def progress(done: int, total: int, path: str) -> None:
        calls.append(done)
        if done == 1:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        runner.reflect_corpus(vault, corpus, progress=progress)
    assert len(list((vault_dir / P / "preference").glob("*.md"))) == 4 + 1  # the example's four, plus the first
    resumed = runner.reflect_corpus(vault, corpus)
    assert resumed.unchanged == 1 and resumed.reflected == 2 and len(resumed.written) == 2
    assert len(list((vault_dir / P / "preference").glob("*.md"))) == 4 + 3
    runner.stop_file().parent.mkdir(parents=True, exist_ok=True)
    runner.stop_file().touch()
    assert runner.reflect_corpus(vault, corpus).halted


class _Cached:
    """The real model with a memo: each test re-embeds the same example vault, only the first pays."""

    memo: ClassVar[dict[str, bytes]] = {}

    def __init__(self, model) -> None:
        self.model, self.name, self.dim = model, model.name, model.dim

    def encode(self, texts: list[str]) -> list[bytes]:
        missing = [t for t in dict.fromkeys(texts) if t not in self.memo]
        self.memo.update(zip(missing, self.model.encode(missing), strict=True))
        return [self.memo[t] for t in texts]


@pytest.fixture
def vector_vault(vault: Vault, embedder, monkeypatch: pytest.MonkeyPatch) -> Vault:
    """The example vault fully embedded with the real model, which also stands in for the warm service."""
    from memvault.index import sync
    from memvault.recall import client
    from memvault.vault import indexing

    embedder = _Cached(embedder)
    index, _ = indexing.open_index(vault.root, vault.config)
    try:
        sync.sync(index, indexing.layout(vault.root, vault.config))
        sync.embed_pending(index, embedder)
    finally:
        index.close()
    monkeypatch.setattr(client, "query_vector", lambda text, timeout: (embedder.name, embedder.encode([text])[0]))
    monkeypatch.setattr(indexing, "service_embedder", lambda config, deadline=None: embedder)
    vectors = lambda texts, timeout=0.25: client.Embedded(embedder.name, embedder.dim, embedder.encode(texts))  # noqa: E731
    monkeypatch.setattr(client, "embed", vectors)
    return vault


def test_a_paraphrase_in_another_session_is_a_duplicate_by_meaning(vector_vault: Vault, tmp_path: Path) -> None:
    """Different words, so a different candidate key: only the cosine (0.84 measured) catches it."""
    first = [ASK, PIP, ("user", "Always use httpx instead of requests."), OK]
    again = [ASK, PIP, ("user", "From now on use httpx, never requests."), OK]
    one = runner.reflect_transcript(vector_vault, write_transcript(tmp_path / "a.jsonl", "sess-a", first))
    two = runner.reflect_transcript(vector_vault, write_transcript(tmp_path / "b.jsonl", "sess-b", again))
    assert len(one.written) == 1 and two.written == []
    (route,) = two.routes
    assert route["action"] == "duplicate" and route["target"] == one.written[0] and "cosine" in route["reason"]
    assert route["key"] != one.routes[0]["key"]


def test_a_changed_preference_becomes_a_supersede_proposal(vector_vault: Vault, tmp_path: Path) -> None:
    first = [ASK, PIP, ("user", "Always squash merge pull requests."), OK]
    changed = [ASK, PIP, ("user", "From now on use rebase merges for pull requests, not squash."), OK]
    one = runner.reflect_transcript(vector_vault, write_transcript(tmp_path / "a.jsonl", "sess-a", first))
    two = runner.reflect_transcript(vector_vault, write_transcript(tmp_path / "b.jsonl", "sess-b", changed))
    (route,) = two.routes
    assert route["action"] == "supersede" and route["target"] == one.written[0]
    assert route["path"].startswith(P + "_review/")
    meta = vector_vault.read(route["path"]).note.meta
    assert meta["proposes_supersede"] == one.written[0] and meta["route"] == "review"
    assert vector_vault.read(one.written[0]).note.meta["status"] == "active"  # nothing replaced until reviewed


def test_an_unrelated_preference_is_saved_even_with_vectors(vector_vault: Vault, tmp_path: Path) -> None:
    said = [ASK, PIP, ("user", "Always answer me in French."), OK]
    report = runner.reflect_transcript(vector_vault, write_transcript(tmp_path / "a.jsonl", "sess-a", said))
    assert [r["action"] for r in report.routes] == ["save"]


def test_a_reworded_idea_is_found_in_the_incubator_by_meaning(vector_vault: Vault, tmp_path: Path) -> None:
    first = [ASK, PIP, ("user", "We should also add a flaky test detector to CI later."), OK]
    again = [ASK, PIP, ("user", "Later we should add a detector for flaky tests to CI."), OK]
    one = runner.reflect_transcript(vector_vault, write_transcript(tmp_path / "a.jsonl", "sess-a", first))
    (path,) = one.written  # the example's hand-written flaky-test note is too different in shape (cosine 0.46)
    related = vector_vault.read(path).note.meta["related"]
    assert "[[bisecting-flaky-tests]]" in related and "[[Dana Kim]]" in related and "[[Ideas]]" not in related
    two = runner.reflect_transcript(vector_vault, write_transcript(tmp_path / "b.jsonl", "sess-b", again))
    (route,) = two.routes
    assert route["action"] == "duplicate" and route["target"] == path and route["key"] != one.routes[0]["key"]


def test_the_llm_miner_runs_once_on_the_final_pass(
    vault_dir: Path, memvault_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memvault.reflect import miner

    monkeypatch.setenv("MEMVAULT_MINER", "claude")
    vault = open_vault(vault_dir)
    asked = []
    monkeypatch.setattr(miner, "choose", lambda settings, probe=True, host=None: ("claude", "a claude answers"))
    ran = miner.MinerRun("claude", "a claude answers")
    monkeypatch.setattr(miner, "run", lambda turns, settings, **kw: (asked.append(settings.miner), ([], ran))[1])
    path = write_transcript(tmp_path / "s.jsonl", "sess-1", [ASK, PIP, UV, OK])
    deferred = runner.reflect_transcript(vault, path)  # a Stop or idle pass
    assert deferred.deferred and asked == [] and runner.pending_bytes(vault, path) > 0
    final = runner.reflect_transcript(vault, path, final=True)  # SessionEnd, the CLI, --corpus
    assert not final.deferred and asked == ["claude"] and final.miner == "claude"
    assert runner.pending_bytes(vault, path) == 0


def test_the_hook_log_record_says_which_miner_ran_and_why(vault: Vault, tmp_path: Path) -> None:
    from memvault.hooks import jobs

    path = write_transcript(tmp_path / "s.jsonl", "sess-1", [ASK, PIP, UV, OK])
    record = jobs.reflect_session(vault, "sess-1", path, final=True)
    assert (record["miner"], record["miner_reason"]) == ("offline", "reflection.miner is offline")
    assert record["claude_calls"] is None and len(record["written"]) == 1


def test_a_temp_file_left_by_a_killed_reflection_is_swept_on_the_next_run(vault: Vault, tmp_path: Path) -> None:
    """A reflection killed between writing a state file's temp copy and renaming it leaves that temp file in the
    state folder; the next reflection removes it, and nothing else there."""
    import os
    import signal
    import subprocess
    import sys
    import time

    from memvault.store import disk

    path = write_transcript(tmp_path / "s1.jsonl", "sess-1", [ASK, PIP])  # nothing to save: the first write is state
    folder = tmp_path / "fault"
    folder.mkdir()
    code = (
        "from pathlib import Path\nfrom memvault import open_vault\nfrom memvault.reflect import runner\n"
        "runner.WAIT_SERVICE_S = 0.0\n"
        f"runner.reflect_transcript(open_vault({str(vault.root)!r}), Path({str(path)!r}))\n"
    )
    env = {**os.environ, "MEMVAULT_FAULT_PAUSE": f"temp file written@{folder}"}
    child = subprocess.Popen([sys.executable, "-c", code], env=env)
    deadline = time.monotonic() + 60
    while not (folder / "paused").exists() and child.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    assert (folder / "paused").exists(), "the reflection never reached a temp file"
    os.kill(child.pid, signal.SIGKILL)  # between the temp file and its rename
    child.wait(timeout=30)
    state = vault.state_dir / "reflect"
    left = [p for p in state.rglob("*") if p.name.endswith(disk.TEMP_SUFFIX)]
    assert left, sorted(p.relative_to(state) for p in state.rglob("*"))
    kept = state / "transcripts" / "notes.tmp"  # look-alikes that are not memvault's temp files
    kept.write_text("keep me")
    (state / ".hidden.json").write_text("{}")
    before = {p for p in state.rglob("*") if p not in left}

    runner.reflect_transcript(vault, path)

    after = set(state.rglob("*"))
    assert not [p for p in after if p.name.endswith(disk.TEMP_SUFFIX)], sorted(after)
    assert before <= after and kept.read_text() == "keep me"


def test_a_pin_and_an_ssn_said_in_a_session_are_saved_nowhere(vault: Vault, tmp_path: Path) -> None:
    """Issue 27: "Remember my bank PIN is 4921 and my SSN is 123-45-6789" was saved HIGH by reflection."""
    before = snapshot(vault.root)
    said = ("user", "Remember my bank PIN is 4921 and my SSN is 123-45-6789")
    path = write_transcript(tmp_path / "s1.jsonl", "sess-1", [ASK, PIP, said, OK, UV, OK])
    report = runner.reflect_transcript(vault, path)
    assert report.written  # the pass did write (the branch rule), so the check below is not vacuous
    changed = [b for p, b in snapshot(vault.root).items() if before.get(p) != b]
    state = [p.read_bytes() for p in vault.state_dir.rglob("*") if p.is_file()]
    for value in (b"4921", b"123-45-6789", b"6789"):
        assert not [b for b in changed + state if value in b], value
