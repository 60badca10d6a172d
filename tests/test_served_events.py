"""With the warm service up, session start, stop, session end and idle take the prompt's short way (`hooks.fast`).

The service runs the event as the hook would; the hook process writes and removes the session's files and starts
the background job only once the answer has reached it. Real hook subprocesses, a real service, real jobs.
"""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import pytest

from memvault import runtime

from .conftest import configure
from .test_hooks import context_of, conversation, jobs, log_records, payload, run_hook, run_hook_loading, wait_for

FAST_WAY = [
    "memvault", "memvault.hooks", "memvault.hooks.fast", "memvault.proctime", "memvault.userfiles", "memvault.wire"
]


@pytest.fixture
def served_vault(vault_dir: Path, memvault_home: Path):
    """The example vault, embedded through a running warm service (stopped at the end)."""
    pytest.importorskip("sentence_transformers")
    from memvault import open_vault
    from memvault.recall import client

    configure(memvault_home, f"vault:\n  root: {vault_dir}\n")
    assert client.start("default", idle_minutes=5)
    try:
        assert client.wait_ready(120) is not None, "the embedding service did not start"
        assert open_vault(vault_dir).reindex(vectors="service").pending == 0
        yield vault_dir
    finally:
        client.stop()


def test_session_start_is_served_and_the_hook_process_writes_what_it_answers(served_vault: Path) -> None:
    start = payload("SessionStart", session="s-1", source="startup", transcript_path="/tmp/t/s-1.jsonl")
    runtime.write_json(runtime.marker("s-1", "reflected"), {"session_id": "s-1"})  # a session started again
    served, loaded = run_hook_loading("session_start", start, ("memvault", "platformdirs", "site", "subprocess", "json",
                                                              "re"))  # fmt: skip
    assert loaded == FAST_WAY, loaded  # no hook, recall or secret-scanner code, no `site`, `subprocess`, json or re
    record = log_records("SessionStart")[-1]
    assert record["served"] is True and record["result"] == "success", record
    context = context_of(served, "SessionStart")
    assert "Core dev flow" in context and "_always-load/dev-flow.md" in context
    marker = runtime.read_json(runtime.marker("s-1", "start"))
    assert marker["transcript_path"] == "/tmp/t/s-1.jsonl" and marker["vault"] == str(served_vault.resolve())
    assert not runtime.marker("s-1", "reflected").exists()
    assert runtime.injected("s-1")["always"] == [e["path"] for e in record["injected"]]
    wait_for(lambda: len(jobs("start")) == 1)  # the session's job, started by the hook process

    # The same event run by the hook itself (no service to hand it to) says the same.
    from memvault.recall import client

    client.stop()
    alone = run_hook("session_start", {**start, "session_id": "s-2"})
    assert json.loads(alone.stdout) == json.loads(served.stdout)
    assert "served" not in log_records("SessionStart")[-1]
    wait_for(lambda: len(jobs("start")) == 2)
    client.stop()  # its start job, run after the service stopped, may have started it again


def test_stop_and_session_end_are_served_and_their_reflection_runs(served_vault: Path, tmp_path: Path) -> None:
    transcript = conversation(tmp_path / "s.jsonl", "ended")
    event = {"session_id": "ended", "transcript_path": str(transcript)}
    run_hook("session_start", payload("SessionStart", source="startup", **event))
    stopped, loaded = run_hook_loading("stop", payload("Stop", **event), ("memvault", "site", "subprocess"))
    assert stopped.returncode == 0 and stopped.stdout == "" and loaded == FAST_WAY, loaded
    record = log_records("Stop")[-1]
    assert record["served"] is True and record["scheduled"] == "reflect", record
    wait_for(lambda: len(jobs("reflect")) == 1)
    ended = run_hook("session_end", payload("SessionEnd", reason="prompt_input_exit", **event))
    assert ended.returncode == 0 and log_records("SessionEnd")[-1]["served"] is True
    wait_for(lambda: runtime.marker("ended", "reflected").exists())
    idle = run_hook("idle", payload("Notification", notification_type="idle_prompt", **event))
    assert idle.returncode == 0 and log_records("Notification")[-1]["served"] is True
    wait_for(lambda: len(jobs("idle")) == 1)


@pytest.mark.skipif(not hasattr(signal, "SIGSTOP"), reason="needs SIGSTOP to wedge the service")
def test_a_wedged_service_changes_nothing_and_the_hook_does_the_work_once(served_vault: Path) -> None:
    from memvault.recall import client

    pid = client.read_info()["pid"]
    os.kill(pid, signal.SIGSTOP)  # takes the connection (the kernel queues it) but never answers
    try:
        started = time.monotonic()
        result = run_hook("session_start", payload("SessionStart", session="s-w", source="startup"))
        wall = time.monotonic() - started
    finally:
        os.kill(pid, signal.SIGCONT)
    assert "Core dev flow" in context_of(result, "SessionStart")
    record = log_records("SessionStart")[-1]
    assert record["not_served"] == "the service did not answer in time" and "served" not in record, record
    assert wall < 10, wall
    wait_for(lambda: len(jobs("start")) >= 1)
    time.sleep(1.0)  # the service, resumed, answers the dropped request: that answer must start nothing more
    assert len(jobs("start")) == 1 and len(log_records("SessionStart")) == 1


def test_an_always_load_edit_of_the_same_size_and_time_is_given_at_the_next_session(served_vault: Path) -> None:
    # The service keeps each always-load note as read (parsed, secrets redacted) by its text, across sessions: an
    # edit that keeps the file's size and modification time must still be given, with its secret redacted.
    note = served_vault / "MemoryVault" / "personal-private" / "_always-load" / "dev-flow.md"
    first = run_hook("session_start", payload("SessionStart", session="e-1", source="startup"))
    assert "Small commits, one logical change each." in context_of(first, "SessionStart")
    before, text = note.stat(), note.read_text(encoding="utf-8")
    line = "- Small commits, one logical change each."
    key = "AKIA" + "ABCDEFGH12345678"
    edited = line.replace("Small commits, one logical change each.", f"Deploy key {key} here.")
    edited += " " * (len(line) - len(edited))  # the same size, byte for byte
    note.write_text(text.replace(line, edited), encoding="utf-8")
    os.utime(note, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert (note.stat().st_size, note.stat().st_mtime_ns) == (before.st_size, before.st_mtime_ns)
    second = run_hook("session_start", payload("SessionStart", session="e-2", source="startup"))
    context = context_of(second, "SessionStart")
    assert log_records("SessionStart")[-1]["served"] is True
    assert "Small commits" not in context and "Deploy key [REDACTED:" in context and key not in context
    wait_for(lambda: len(jobs("start")) == 2)  # each session's start job, done before the fixture stops the service


HOST_EVENTS = [("codex", "SessionStart", "SessionStart:startup"), ("codex", "Stop", "Stop"),
               ("codex", "SessionEnd", "SessionEnd:other"), ("gemini", "SessionStart", "SessionStart:startup"),
               ("gemini", "AfterAgent", "AfterAgent"), ("gemini", "SessionEnd", "SessionEnd:exit")]  # fmt: skip


@pytest.mark.parametrize(("host", "event", "key"), HOST_EVENTS, ids=lambda v: str(v))
def test_codex_and_gemini_session_events_are_served_and_answer_as_the_hook_would(
    host: str, event: str, key: str, served_vault: Path, tmp_path: Path
) -> None:
    from .test_host_hooks import recorded, run

    transcript = conversation(tmp_path / "t.jsonl", "host")
    stdin = recorded(host, key, transcript_path=str(transcript))
    served = run(host, event, stdin)
    assert served.returncode == 0, served.stderr
    record = [r for r in runtime.read_log() if r.get("host") == host][-1]
    assert record["served"] is True and record["result"] == "success", record
    if event == "SessionStart":
        assert "Core dev flow" in json.loads(served.stdout)["hookSpecificOutput"]["additionalContext"]
        wait_for(lambda: len(jobs("start")) == 1)
    else:  # the end of a turn or of the session: nothing printed, reflection started by the hook process
        assert served.stdout == "" and record["scheduled"].startswith("reflect"), record
        wait_for(lambda: len(jobs("reflect")) == 1)

    # The same event run by the hook itself (no service to hand it to) says the same.
    from memvault.recall import client

    client.stop()
    alone = run(host, event, {**stdin, "session_id": stdin["session_id"] + "-alone"})
    assert alone.stdout == served.stdout
    assert "served" not in [r for r in runtime.read_log() if r.get("host") == host][-1]
    job = "start" if event == "SessionStart" else "reflect"
    wait_for(lambda: len(jobs(job)) == 2)
    client.stop()  # a start job that ran after the service stopped may have started it again


def test_the_launcher_hands_over_every_event_the_hosts_register() -> None:
    from memvault.hooks import _launch
    from memvault.hosts import spec

    registered = {(host.name, event.name) for host in spec.HOSTS.values() for event in host.events}
    assert set(_launch.FAST_HOST_EVENTS) == registered
