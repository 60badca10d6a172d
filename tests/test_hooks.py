"""The hooks as the host runs them: real subprocesses, contract-shaped JSON on stdin, garbage too, always exit 0."""

from __future__ import annotations

import ast
import contextlib
import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from memvault import runtime
from memvault.claude.settings import INTERPRETER_FLAGS

from .conftest import REPO, TRANSCRIPTS, configure

HOOKS = REPO / "memvault" / "hooks"
PYTHON = [sys.executable, *INTERPRETER_FLAGS]  # as `memvault install` registers the hooks
EVENTS = {
    "session_start": "SessionStart",
    "user_prompt_submit": "UserPromptSubmit",
    "stop": "Stop",
    "session_end": "SessionEnd",
    "idle": "Notification",
}
SILENT = ("stop", "session_end", "idle")  # their stdout is ignored or, for Stop, would continue the conversation
GARBAGE = ["", "not json", "[1, 2]", '"a string"', "{}", '{"session_id": 5, "prompt": ["x"]}', '{"truncated": ']
FLAKY = "how do I fix a flaky test that fails only sometimes on CI?"


def payload(event: str, session: str = "sess-1", **extra: Any) -> dict[str, Any]:
    """Shaped like the contract's examples (§1.6–1.7)."""
    base = {
        "session_id": session,
        "transcript_path": f"/tmp/no-such/{session}.jsonl",
        "cwd": "/home/u/project",
        "hook_event_name": event,
        "permission_mode": "default",
    }
    return {**base, **extra}


def run_hook(name: str, stdin: str | dict[str, Any], **env: str) -> subprocess.CompletedProcess[str]:
    text = stdin if isinstance(stdin, str) else json.dumps(stdin)
    return subprocess.run(
        [*PYTHON, str(HOOKS / f"{name}.py")],
        input=text,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **env},
    )


def run_hook_loading(
    name: str, stdin: dict[str, Any], prefixes: tuple[str, ...]
) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    """Run a hook as `run_hook` does, and list the modules it loaded whose names start with one of `prefixes`."""
    probe = (  # the script as its own __main__, without runpy (which imports pkgutil and typing)
        "import sys\n"
        "path = sys.argv[1]\n"
        "with open(path, encoding='utf-8') as f:\n    code = compile(f.read(), path, 'exec')\n"
        "try:\n    exec(code, {'__name__': '__main__', '__file__': path})\nexcept SystemExit:\n    pass\n"
        f"print(sorted(m for m in sys.modules if m.startswith({prefixes!r})), file=sys.stderr)\n"
    )
    result = subprocess.run(
        [*PYTHON, "-c", probe, str(HOOKS / f"{name}.py")],
        input=json.dumps(stdin), capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    return result, ast.literal_eval(result.stderr.strip().splitlines()[-1])


def log_records(hook: str | None = None) -> list[dict[str, Any]]:
    return [r for r in runtime.read_log() if hook is None or r.get("hook") == hook]


KEYWORD_FLOOR = "recall:\n  min_coverage: 0.3\n  min_probability: 0.02\n"  # the judge's floor, lowered too


@pytest.fixture
def hook_vault(vault_dir: Path, memvault_home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The example vault, indexed keyword-only, with hooks that never start the embedding service.

    Keyword-only recall's relevance floor is lowered (`recall.min_probability`; `min_coverage` for the fallback)
    so that these tests of injection, deduplication and logging get injections; the default floor has its own tests.
    """
    config = memvault_home / "config.yaml"
    config.parent.mkdir(parents=True, exist_ok=True)
    text = f"vault:\n  root: {vault_dir}\nembedding:\n  warm_service: false\n{KEYWORD_FLOOR}"
    config.write_text(text, encoding="utf-8")
    from memvault import open_vault

    open_vault(vault_dir).reindex(vectors="none")
    return vault_dir


def context_of(result: subprocess.CompletedProcess[str], event: str) -> str:
    out = json.loads(result.stdout)
    assert set(out) <= {"hookSpecificOutput", "systemMessage"}
    assert out["hookSpecificOutput"]["hookEventName"] == event
    context = out["hookSpecificOutput"]["additionalContext"]
    assert isinstance(context, str) and len(context) < 10_000  # the host files away anything longer
    return context


# ---- robustness ---------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(EVENTS))
def test_garbage_stdin_exits_0_and_prints_valid_json_or_nothing(name: str, hook_vault: Path) -> None:
    for stdin in GARBAGE:
        result = run_hook(name, stdin)
        assert result.returncode == 0, (stdin, result.stderr)
        if result.stdout.strip():
            assert name not in SILENT
            out = json.loads(result.stdout)
            assert isinstance(out, dict) and set(out) <= {"hookSpecificOutput", "systemMessage"}
    assert len(log_records(EVENTS[name])) == len(GARBAGE)  # one line per run, errors included


@pytest.mark.parametrize("name", sorted(EVENTS))
def test_no_vault_configured_is_a_quiet_no_op_said_once_at_session_start(name: str, memvault_home: Path) -> None:
    result = run_hook(name, payload(EVENTS[name], prompt=FLAKY, source="startup"))
    assert result.returncode == 0
    if name == "session_start":
        assert json.loads(result.stdout) == {
            "systemMessage": "MemoryVault is off for this session: no vault configured (run `memvault init PATH`)"
        }
    else:
        assert result.stdout == ""
    assert log_records(EVENTS[name])[-1]["result"] == "skipped"


def test_broken_config_is_reported_at_session_start_only(memvault_home: Path) -> None:
    (memvault_home / "config.yaml").parent.mkdir(parents=True, exist_ok=True)
    (memvault_home / "config.yaml").write_text("recall:\n  kk: 3\n", encoding="utf-8")
    start = run_hook("session_start", payload("SessionStart", source="startup"))
    assert start.returncode == 0
    assert "recall.kk" in json.loads(start.stdout)["systemMessage"]
    prompt = run_hook("user_prompt_submit", payload("UserPromptSubmit", prompt=FLAKY))
    assert prompt.returncode == 0 and prompt.stdout == ""
    assert log_records("UserPromptSubmit")[-1]["result"] == "error"


def test_hooks_never_import_click_rich_yaml_or_the_model(hook_vault: Path) -> None:
    run_hook("session_start", payload("SessionStart", source="startup"))  # fills the settings cache
    heavy = ("click", "rich", "yaml", "torch", "sentence_transformers", "numpy")
    for name in EVENTS:
        stdin = payload(EVENTS[name], prompt=FLAKY, source="resume")
        _, loaded = run_hook_loading(name, stdin, heavy)
        assert [m for m in loaded if m.split(".")[0] in heavy] == [], name
    # With no service running, a keyword-only prompt never opens a socket, nor imports the module (3–5 ms), nor
    # typing (5 ms: memvault.records stands in for NamedTuple) or dataclasses (8 ms with inspect), nor the
    # thread a vector query runs on, the service's vector encoding or the scan for a vault without an index.
    stdin = payload("UserPromptSubmit", prompt=FLAKY)
    unused = ("socket", "typing", "dataclasses", "inspect", "threading", "base64", "memvault.recall.scan")
    _, loaded = run_hook_loading("user_prompt_submit", stdin, unused)
    assert loaded == [] and log_records("UserPromptSubmit")[-1]["mode"] == "keyword"
    # SessionStart reads the change log without typing or dataclasses (13 ms together). It compiles the secret
    # patterns (about 30 ms) only to redact the always-load text it gives (the example vault has some).
    light = ("typing", "dataclasses", "inspect")
    _, loaded = run_hook_loading("session_start", payload("SessionStart", source="startup"), ("memvault.store", *light))
    assert "memvault.store.changelog" in loaded and "memvault.store.secrets" in loaded, loaded
    assert [m for m in loaded if m.split(".")[0] in light] == [], loaded


def test_a_keyword_only_prompt_finds_its_folders_without_platformdirs(
    hook_vault: Path, memvault_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As a user runs it (no MEMVAULT_HOME: the XDG folders on Linux), with no service, the prompt hook reads its
    config, settings cache and index and never imports platformdirs (15 ms), even to look for the service."""
    if not sys.platform.startswith("linux"):
        pytest.skip("the XDG folders are named without platformdirs on Linux only")
    monkeypatch.delenv("MEMVAULT_HOME")
    for variable, target in (("XDG_CONFIG_HOME", memvault_home), ("XDG_STATE_HOME", memvault_home / "state")):
        (tmp_path / variable).mkdir()
        (tmp_path / variable / "memvault").symlink_to(target)  # the same files MEMVAULT_HOME named
        monkeypatch.setenv(variable, str(tmp_path / variable))
    (tmp_path / "runtime").mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "runtime"))
    from memvault import paths

    # made by any memvault process that looked for the service (only that once asks platformdirs where it is)
    assert paths.runtime_dir() == tmp_path / "runtime" / "memvault"
    stdin = payload("UserPromptSubmit", prompt=FLAKY)
    run_hook("user_prompt_submit", stdin)  # fills the settings cache, keyed by the config file's new name
    result, loaded = run_hook_loading("user_prompt_submit", {**stdin, "session_id": "s-xdg"}, ("platformdirs",))
    assert loaded == [] and "bisecting-flaky-tests.md" in context_of(result, "UserPromptSubmit")
    record = log_records("UserPromptSubmit")[-1]
    assert record["mode"] == "keyword" and record["not_served"] == "the service is not running", record


def test_hooks_registered_with_or_without_the_site_flag_do_the_same_work(hook_vault: Path) -> None:
    """`python -S` (what install writes now) runs the site set-up itself before a full hook; an install from
    before the flag (`python <script>`) still works as it did."""
    run_hook("session_start", payload("SessionStart", source="startup"))
    for python in ([sys.executable], PYTHON):
        result = subprocess.run(
            [*python, str(HOOKS / "user_prompt_submit.py")],
            input=json.dumps(payload("UserPromptSubmit", session=f"s-{len(python)}", prompt=FLAKY)),
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert result.returncode == 0 and result.stderr == "", result.stderr
        assert "bisecting-flaky-tests.md" in context_of(result, "UserPromptSubmit")
        assert log_records("UserPromptSubmit")[-1]["mode"] == "keyword"  # the full hook, its index read itself


@pytest.mark.parametrize("own", ["home", "xdg", "temp"])
def test_the_prompt_hooks_short_way_finds_the_service_where_paths_puts_it(
    own: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`hooks.fast` names the runtime folder without platformdirs; it must be where platformdirs puts it."""
    from memvault import paths
    from memvault.hooks import fast

    if own == "home":
        monkeypatch.setenv("MEMVAULT_HOME", str(tmp_path / "home"))
    elif not sys.platform.startswith("linux"):
        pytest.skip("the XDG rules are Linux's")
    else:
        monkeypatch.delenv("MEMVAULT_HOME", raising=False)
        if own == "xdg":
            runtime_root = tmp_path / "xdg"
            runtime_root.mkdir(mode=0o700)
            monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime_root))
        else:  # no XDG_RUNTIME_DIR and no /run/user/<uid>, as in containers and CI: runtime-<uid> in TMPDIR
            if os.path.isdir(f"/run/user/{os.geteuid()}"):
                pytest.skip("this machine has /run/user/<uid>; the temp-folder fallback is not used")
            monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
            for name in ("TEMP", "TMP"):
                monkeypatch.delenv(name, raising=False)
            monkeypatch.setenv("TMPDIR", str(tmp_path))
            import tempfile

            monkeypatch.setattr(tempfile, "tempdir", None)  # gettempdir() reads TMPDIR again
    assert fast.runtime_folder() is None  # not made yet: the full hook runs (and paths makes it)
    made = paths.runtime_dir()
    assert fast.runtime_folder() == str(made)
    os.chmod(made, 0o755)  # noqa: S103 - open to others, as an attacker would leave it: never used
    assert fast.runtime_folder() is None


def test_no_module_beside_the_launchers_shadows_the_standard_library() -> None:
    """A hook process runs a launcher by path, so `memvault/hooks/` is first on its sys.path."""
    names = {p.stem for p in HOOKS.glob("*.py")} | {p.name for p in HOOKS.iterdir() if p.is_dir()}
    assert "events" in names and "jobs" in names  # the event handlers really live beside the launchers
    assert not names & set(sys.stdlib_module_names), names & set(sys.stdlib_module_names)


# ---- SessionStart -------------------------------------------------------------------------------


def test_session_start_injects_always_load_and_writes_the_marker(hook_vault: Path) -> None:
    folder = hook_vault / "MemoryVault/personal-private"
    (folder / "_always-load/secret-plan.md").write_text("---\nprivate: true\n---\n# Secret plan\nhidden words\n")
    (folder / "preference/tabs.md").write_text("---\nkind: preference\nalways_load: true\n---\n# Tabs\nUse tabs.\n")
    (folder / "_always-load/old.md").write_text("---\nstatus: superseded\n---\n# Old rule\nobsolete words\n")
    from memvault import open_vault

    open_vault(hook_vault).reindex(vectors="none")  # a flag set outside memvault is seen after a reindex
    event = payload("SessionStart", source="startup", transcript_path="/tmp/t/sess-1.jsonl", model="claude-x")
    result = run_hook("session_start", event)
    assert result.returncode == 0
    context = context_of(result, "SessionStart")
    assert context.startswith("<memoryvault-always-load") and context.endswith("</memoryvault-always-load>")
    assert "Core dev flow" in context and "_always-load/dev-flow.md" in context
    assert "Use tabs." in context  # always_load: true outside _always-load/ (found through the index)
    assert "hidden words" not in context and "obsolete words" not in context
    message = json.loads(result.stdout)["systemMessage"]
    assert message.startswith("Loaded 2 MemoryVault always-load entries")
    assert "1 awaiting review" in message and "1 in the inbox" in message
    marker = runtime.read_json(runtime.marker("sess-1", "start"))
    assert marker["transcript_path"] == "/tmp/t/sess-1.jsonl" and marker["cwd"] == "/home/u/project"
    assert marker["started"] and marker["vault"] == str(hook_vault.resolve())


def test_session_start_caps_count_and_size(hook_vault: Path, memvault_home: Path) -> None:
    folder = hook_vault / "MemoryVault/personal-private/_always-load"
    for n in range(30):
        (folder / f"rule-{n:02d}.md").write_text(f"# Rule {n}\n" + f"rule {n} words " * 200)
    configure(memvault_home, "recall:\n  always_load_max: 12\n  always_load_chars: 4000\n")
    context = context_of(run_hook("session_start", payload("SessionStart", source="startup")), "SessionStart")
    assert len(context) <= 4000
    assert context.count("\n## ") < 12 and "Not shown for space:" in context  # cut entries are named
    named = set(re.findall(r"_always-load/([\w-]+)\.md", context))
    assert len(named) == 12  # shown or named: exactly always_load_max entries


# ---- UserPromptSubmit ---------------------------------------------------------------------------


def test_prompt_recall_injects_fenced_context_and_dedups_within_the_session(hook_vault: Path) -> None:
    run_hook("session_start", payload("SessionStart", source="startup"))
    first = run_hook("user_prompt_submit", payload("UserPromptSubmit", prompt=FLAKY))
    context = context_of(first, "UserPromptSubmit")
    assert context.startswith("<memoryvault-recall") and "bisecting-flaky-tests.md" in context
    assert "dev-flow.md" not in context  # always-load entries are already in the session
    message = json.loads(first.stdout)["systemMessage"]
    assert message.startswith("Loaded ") and "Bisecting flaky tests" in message
    given = {e["path"] for e in log_records("UserPromptSubmit")[-1]["injected"]}

    second = run_hook("user_prompt_submit", payload("UserPromptSubmit", prompt=FLAKY))
    again = json.loads(second.stdout)["hookSpecificOutput"]["additionalContext"] if second.stdout else ""
    assert not any(path in again for path in given)
    assert set(log_records("UserPromptSubmit")[-1]["deduped"]) >= given

    other = run_hook("user_prompt_submit", payload("UserPromptSubmit", session="sess-2", prompt=FLAKY))
    assert "bisecting-flaky-tests.md" in context_of(other, "UserPromptSubmit")  # another session starts fresh


def test_compaction_lets_recall_repeat_but_resume_does_not(hook_vault: Path) -> None:
    def ask() -> str:
        return run_hook("user_prompt_submit", payload("UserPromptSubmit", prompt=FLAKY)).stdout

    assert "bisecting-flaky-tests.md" in ask()
    run_hook("session_start", payload("SessionStart", source="resume"))  # the transcript replays what was given
    assert "bisecting-flaky-tests.md" not in ask()
    run_hook("session_start", payload("SessionStart", source="compact"))  # compaction dropped it from the context
    assert "bisecting-flaky-tests.md" in ask()


def test_trivial_prompts_and_slash_commands_are_skipped(hook_vault: Path) -> None:
    for prompt in ("ok", "  thanks  ", "/compact focus on the flaky test failures"):
        result = run_hook("user_prompt_submit", payload("UserPromptSubmit", prompt=prompt))
        assert result.returncode == 0 and result.stdout == ""
        assert log_records("UserPromptSubmit")[-1]["result"] == "skipped"


def test_private_notes_and_secrets_in_prompts_stay_out(hook_vault: Path) -> None:
    note = hook_vault / "MemoryVault/personal-private/fix/flaky-private.md"
    note.write_text("---\nprivate: true\n---\n# Flaky test private notes\nflaky test fails sometimes CI\n")
    from memvault import open_vault

    open_vault(hook_vault).reindex(vectors="none")
    key = "sk-ant-api03-" + "A1b2C3d4E5f6G7h8" * 5
    result = run_hook("user_prompt_submit", payload("UserPromptSubmit", prompt=f"{FLAKY} my key is {key}"))
    assert "flaky-private" not in result.stdout
    logged = json.dumps(log_records("UserPromptSubmit")[-1])
    assert key not in logged and "flaky test" in logged


def test_settings_cache_follows_config_edits(hook_vault: Path, memvault_home: Path) -> None:
    assert len(log_records()) == 0
    run_hook("user_prompt_submit", payload("UserPromptSubmit", prompt=FLAKY))
    assert len(log_records("UserPromptSubmit")[-1]["injected"]) >= 2  # the rest are below the relevance floor
    config = memvault_home / "config.yaml"
    config.write_text(config.read_text().replace("recall:\n", "recall:\n  k: 1\n"))
    run_hook("user_prompt_submit", payload("UserPromptSubmit", session="s-2", prompt=FLAKY))
    assert len(log_records("UserPromptSubmit")[-1]["injected"]) == 1
    off = run_hook("user_prompt_submit", payload("UserPromptSubmit", session="s-3", prompt=FLAKY), MEMVAULT_ENABLED="0")
    assert off.stdout == "" and log_records("UserPromptSubmit")[-1]["result"] == "skipped"


def test_before_the_first_reindex_prompts_fall_back_to_a_file_scan(vault_dir: Path, memvault_home: Path) -> None:
    memvault_home.mkdir(parents=True, exist_ok=True)
    config = f"vault:\n  root: {vault_dir}\nembedding:\n  warm_service: false\n{KEYWORD_FLOOR}"
    (memvault_home / "config.yaml").write_text(config)
    result = run_hook("user_prompt_submit", payload("UserPromptSubmit", prompt=FLAKY))
    assert "bisecting-flaky-tests.md" in context_of(result, "UserPromptSubmit")
    assert "no index yet" in log_records("UserPromptSubmit")[-1]["reason"]


def test_while_the_first_reindex_runs_prompts_fall_back_to_a_file_scan(vault_dir: Path, memvault_home: Path) -> None:
    """SessionStart starts the first reindex in the background; a prompt before it ends finds an index that holds
    part of the vault, or none of it (the real Claude Code plugin test met this on a loaded machine)."""
    from memvault import open_vault
    from memvault.index import core as ix

    memvault_home.mkdir(parents=True, exist_ok=True)
    config = f"vault:\n  root: {vault_dir}\nembedding:\n  warm_service: false\n{KEYWORD_FLOOR}"
    (memvault_home / "config.yaml").write_text(config)
    vault = open_vault(vault_dir)
    ix.open_index(vault.index_file, vector=False).close()  # what a reindex commits first: the tables, no notes
    result = run_hook("user_prompt_submit", payload("UserPromptSubmit", prompt=FLAKY))
    assert "bisecting-flaky-tests.md" in context_of(result, "UserPromptSubmit")
    assert log_records("UserPromptSubmit")[-1]["reason"].startswith("no index yet: scanned the files")
    vault.reindex(vectors="none")  # once it has finished, the index answers
    result = run_hook("user_prompt_submit", payload("UserPromptSubmit", session="s-2", prompt=FLAKY))
    assert "bisecting-flaky-tests.md" in context_of(result, "UserPromptSubmit")
    record = log_records("UserPromptSubmit")[-1]
    assert record["mode"] == "keyword" and "scanned" not in record["reason"], record


# ---- kill switch, STOP file, the silent hooks --------------------------------------------------------


def test_kill_switch_makes_every_hook_a_no_op(hook_vault: Path, memvault_home: Path) -> None:
    config = memvault_home / "config.yaml"
    config.write_text(config.read_text() + "memory:\n  enabled: false\n")
    for name, event in EVENTS.items():
        result = run_hook(name, payload(event, prompt=FLAKY, source="startup"))
        assert result.returncode == 0 and result.stdout == ""
    assert not runtime.markers("start")
    assert [r["result"] for r in log_records()] == ["skipped"] * len(EVENTS)
    assert all("kill switch" in r["reason"] for r in log_records())


def test_stop_prints_nothing_honours_stop_hook_active_and_the_stop_file(hook_vault: Path, tmp_path: Path) -> None:
    transcript = tmp_path / "t.jsonl"
    transcript.write_text("")
    active = run_hook("stop", payload("Stop", stop_hook_active=True, transcript_path=str(transcript)))
    assert active.returncode == 0 and active.stdout == ""
    assert "stop_hook_active" in log_records("Stop")[-1]["reason"]
    from memvault import paths

    paths.stop_file().parent.mkdir(parents=True, exist_ok=True)
    paths.stop_file().touch()
    halted = run_hook("stop", payload("Stop", stop_hook_active=False, transcript_path=str(transcript)))
    assert halted.stdout == "" and "STOP" in log_records("Stop")[-1]["reason"]
    end = run_hook("session_end", payload("SessionEnd", reason="prompt_input_exit", transcript_path=str(transcript)))
    assert end.stdout == "" and "STOP" in log_records("SessionEnd")[-1]["reason"]


def test_idle_hook_ignores_other_notifications(hook_vault: Path) -> None:
    result = run_hook("idle", payload("Notification", notification_type="permission_prompt", message="Needs you"))
    assert result.stdout == "" and log_records("Notification")[-1]["result"] == "skipped"


# ---- the log --------------------------------------------------------------------------------------


def test_log_rolls_over_and_old_files_and_markers_are_pruned(memvault_home: Path) -> None:
    for n in range(40):
        runtime.log_event({"hook": "UserPromptSubmit", "n": n}, max_bytes=1000)
    files = sorted(runtime.log_dir().glob("hooks-*.jsonl"))
    assert len(files) > 2 and all(f.stat().st_size < 1200 for f in files)
    assert [r["n"] for r in runtime.read_log()] == list(range(40))  # nothing lost, in order
    runtime.write_start_marker("old", {})
    runtime.mark_reflected("old")
    runtime.write_start_marker("open", {})
    month_ago = time.time() - 31 * 86400
    for path in [*files[:2], runtime.marker("old", "reflected"), runtime.marker("open", "start")]:
        os.utime(path, (month_ago, month_ago))
    removed = runtime.prune(log_days=30, marker_days=30)
    assert removed == {"logs": 2, "markers": 1, "locks": 0}
    assert runtime.marker("open", "start").exists()  # open sessions are recovered, never pruned


def test_old_reflection_locks_of_finished_sessions_are_pruned(memvault_home: Path) -> None:
    """Each session's reflection takes `<session>.lock` in the sessions folder; old ones must not pile up."""
    from memvault.store import disk

    folder = runtime.sessions_dir()
    folder.mkdir(parents=True)
    runtime.write_start_marker("open", {})
    month_ago = time.time() - 31 * 86400
    for name in ("done-old", "open", "done-new"):
        with disk.try_lock(folder / f"{runtime.session_name(name)}.lock", 0) as held:  # as reflect_session does
            assert held
        if name != "done-new":
            os.utime(folder / f"{name}.lock", (month_ago, month_ago))
    assert runtime.prune(log_days=30, marker_days=30)["locks"] == 1
    assert sorted(p.name for p in folder.glob("*.lock")) == ["done-new.lock", "open.lock"]


def test_inspect_shows_what_was_injected_and_why(hook_vault: Path) -> None:
    from click.testing import CliRunner

    from memvault.cli import cli

    run_hook("user_prompt_submit", payload("UserPromptSubmit", prompt=FLAKY))
    run_hook("user_prompt_submit", payload("UserPromptSubmit", prompt=FLAKY))
    result = CliRunner().invoke(cli, ["inspect", "--session", "sess"], terminal_width=200)
    assert result.exit_code == 0, result.output
    assert "bisecting-flaky-tests.md" in result.output and "keywords" in result.output
    assert "already given this session" in result.output and FLAKY[:30] in result.output
    records = json.loads(CliRunner().invoke(cli, ["inspect", "--json"]).output)
    assert [r["hook"] for r in records] == ["UserPromptSubmit", "UserPromptSubmit"]
    assert CliRunner().invoke(cli, ["inspect", "--session", "nope"]).output.startswith("no hook runs logged")


def test_an_unrelated_prompt_injects_nothing_and_the_log_says_why(hook_vault: Path, memvault_home: Path) -> None:
    """Keyword-only (the service is off here) with the default floor: a shared word is not enough."""
    from click.testing import CliRunner

    from memvault.cli import cli

    config = memvault_home / "config.yaml"
    config.write_text(config.read_text().replace(KEYWORD_FLOOR, ""))  # the shipped floor
    prompt = "any tips for writing the release notes of my fantasy novel?"
    result = run_hook("user_prompt_submit", payload("UserPromptSubmit", prompt=prompt))
    assert result.returncode == 0 and result.stdout == ""
    record = log_records("UserPromptSubmit")[-1]
    assert record["injected"] == [] and record["dropped"], record  # recall found candidates; the floor said no
    assert "nothing passed the relevance floor" in record["reason"]
    assert all("keyword-only" in d["why"] and "<" in d["why"] for d in record["dropped"])
    shown = CliRunner().invoke(cli, ["inspect"], terminal_width=200).output
    assert "below the relevance floor, not injected" in shown and record["dropped"][0]["path"] in shown

    related = "how should we roll out a database migration"
    given = run_hook("user_prompt_submit", payload("UserPromptSubmit", session="s-2", prompt=related))
    assert "db-migration-rollout.md" in context_of(given, "UserPromptSubmit")
    assert "≥" in log_records("UserPromptSubmit")[-1]["injected"][0]["why"]


def test_recall_explain_shows_each_hits_signals_and_why_it_was_dropped(hook_vault: Path) -> None:
    from click.testing import CliRunner

    from memvault.cli import cli

    # Keyword-only here: "run" is the one content word of the prompt that the example vault's notes contain.
    result = CliRunner().invoke(cli, ["recall", "--wait", "0", "--explain", "you run it then"], terminal_width=200)
    assert result.exit_code == 0, result.output
    assert "below the floor:" in result.output and "passed:" not in result.output
    assert "1 word" in result.output and "1 of the prompt's words < 2" in result.output
    related = CliRunner().invoke(cli, ["recall", "--wait", "0", "--explain", FLAKY], terminal_width=200).output
    assert "passed:" in related and "bisecting-flaky-tests.md" in related


# ---- the warm service up, then wedged ------------------------------------------------------------------


@pytest.mark.skipif(not hasattr(signal, "SIGSTOP"), reason="needs SIGSTOP to wedge the service")
def test_prompt_recall_is_hybrid_with_the_service_and_keeps_the_budget_when_it_hangs(
    hook_vault: Path, memvault_home: Path
) -> None:
    pytest.importorskip("sentence_transformers")
    from memvault import open_vault
    from memvault.recall import client

    # The budget counts from the process's start: on a loaded machine Python's start-up alone can take
    # most of 300 ms. A wider budget keeps this test about the service, not about the machine's load.
    budget = 2000
    configure(memvault_home, f"recall:\n  prompt_budget_ms: {budget}\n")
    assert client.start("default", idle_minutes=5)
    try:
        info = client.wait_ready(120)
        assert info is not None, "the embedding service did not start"
        report = open_vault(hook_vault).reindex(vectors="service")
        assert report.embedded > 0 and report.pending == 0
        assert client.query_vector("warm up the model's first query", 30) is not None  # the first one is slow
        # SessionStart's job ends by having the service load the index's vectors, before the first prompt.
        from memvault.hooks import jobs

        vault = open_vault(hook_vault)
        assert str(vault.index_file) not in client.status()["in_memory"]
        assert jobs.load_vectors(vault)
        deadline = time.monotonic() + 30
        while str(vault.index_file) not in client.status()["in_memory"]:
            assert time.monotonic() < deadline, client.status()
            time.sleep(0.05)
        run_hook("user_prompt_submit", payload("UserPromptSubmit", prompt="ok"))  # settings cache, as in a session
        result = run_hook("user_prompt_submit", payload("UserPromptSubmit", prompt=FLAKY))
        assert "bisecting-flaky-tests.md" in context_of(result, "UserPromptSubmit")
        record = log_records("UserPromptSubmit")[-1]
        why = {k: record.get(k) for k in ("reason", "duration_ms", "mode")}
        assert record["mode"] == "hybrid" and record["vec_hits"] > 0 and record["result"] == "success", why
        assert "cosine" in record["injected"][0]["why"] and record["recall_ms"] > 0  # the judge read the vector
        assert record["served"] is True and "not_served" not in record, why  # the service ran the event
        assert runtime.injected("sess-1")["recalled"] == [h["path"] for h in record["injected"]]  # written here

        # Handed over, the hook process loads none of the hook, recall or platform-path code, nor `site` (`-S`).
        stdin = payload("UserPromptSubmit", session="s-probe", prompt=FLAKY)
        handed, loaded = run_hook_loading("user_prompt_submit", stdin, ("memvault", "platformdirs", "site"))
        assert "bisecting-flaky-tests.md" in context_of(handed, "UserPromptSubmit")
        fast_way = ["memvault", "memvault.hooks", "memvault.hooks.fast", "memvault.proctime", "memvault.userfiles",
                    "memvault.wire"]
        assert loaded == fast_way, loaded

        # A setting overridden in the hook's environment is honoured by the service (here the kill switch) ...
        off = run_hook(
            "user_prompt_submit", payload("UserPromptSubmit", session="s-off", prompt=FLAKY), MEMVAULT_ENABLED="0"
        )
        record = log_records("UserPromptSubmit")[-1]
        assert off.stdout == "" and record["served"] is True and record["result"] == "skipped", record
        assert "kill switch" in record["reason"]
        # ... but another config file or state folder (here MEMVAULT_CONFIG) is not the service's: the hook runs itself.
        other = run_hook(
            "user_prompt_submit", payload("UserPromptSubmit", session="s-env", prompt=FLAKY),
            MEMVAULT_CONFIG=str(memvault_home / "config.yaml"),
        )  # fmt: skip
        assert "bisecting-flaky-tests.md" in context_of(other, "UserPromptSubmit")
        record = log_records("UserPromptSubmit")[-1]
        assert record["mode"] == "hybrid" and "served" not in record
        assert record["not_served"] == "the service said: the hook's config or state folder is not the service's"

        # Codex CLI's and Gemini CLI's prompt events take the same short way, answered in their own shape.
        for host, event in (("codex", "UserPromptSubmit"), ("gemini", "BeforeAgent")):
            answer = subprocess.run(
                [*PYTHON, str(HOOKS / "host_event.py"), host, event],
                input=json.dumps(payload(event, session=f"s-{host}", prompt=FLAKY)),
                capture_output=True, text=True, timeout=60,
            )  # fmt: skip
            out = json.loads(answer.stdout)
            assert out["hookSpecificOutput"]["hookEventName"] == event
            assert "bisecting-flaky-tests.md" in out["hookSpecificOutput"]["additionalContext"]
            assert ("systemMessage" in out) is (host == "gemini")  # Codex shows it as a warning on every prompt
            record = log_records("UserPromptSubmit")[-1]
            assert record["host"] == host and record["served"] is True, record

        unrelated = run_hook("user_prompt_submit", payload("UserPromptSubmit", prompt="What is the capital of France?"))
        assert unrelated.returncode == 0 and unrelated.stdout == ""  # the example: nothing injected
        record = log_records("UserPromptSubmit")[-1]
        # Vector-only when no word of the prompt is in the vault; the top k (and the room kept for what the
        # session already has) are all dropped.
        assert record["mode"] in ("hybrid", "vector") and record["injected"] == [] and len(record["dropped"]) >= 5
        assert "nothing passed the relevance floor (best: P(relevant)" in record["reason"]
        assert "cosine" in record["reason"]

        # While the first reindex runs (SessionStart starts it) the index holds only part of the vault: the
        # service says so, and the event it runs scans the files instead.
        index_file = open_vault(hook_vault).index_file
        with contextlib.closing(sqlite3.connect(index_file)) as conn, conn:
            conn.execute("DELETE FROM meta WHERE key = 'last_sync'")
        building = run_hook("user_prompt_submit", payload("UserPromptSubmit", session="s-build", prompt=FLAKY))
        assert "bisecting-flaky-tests.md" in context_of(building, "UserPromptSubmit")
        record = log_records("UserPromptSubmit")[-1]
        assert record["served"] is True and record["reason"].startswith("no index yet: scanned the files"), record
        assert open_vault(hook_vault).reindex(vectors="service").pending == 0  # a whole sync: built again

        pid = client.read_info()["pid"]
        os.kill(pid, signal.SIGSTOP)  # accepts connections (the kernel queues them) but never answers
        try:
            started = time.monotonic()
            wedged = run_hook("user_prompt_submit", payload("UserPromptSubmit", session="s-2", prompt=FLAKY))
            wall = time.monotonic() - started
        finally:
            os.kill(pid, signal.SIGCONT)
        assert "bisecting-flaky-tests.md" in context_of(wedged, "UserPromptSubmit")  # keyword results, in time
        record = log_records("UserPromptSubmit")[-1]
        assert record["result"] == "partial" and record["mode"] == "keyword"
        assert record["reason"] == "the embedding service did not answer in time (keyword-only)"
        assert record["not_served"] == "the service did not answer in time"  # the short way was tried first
        assert record["duration_ms"] < budget + 300, record  # the budget, with slack for a loaded CI machine
        assert wall < 5, wall  # no hang, whatever the machine
    finally:
        client.stop()


def test_the_log_only_skips_the_secret_scanner_for_text_it_could_not_flag() -> None:
    from memvault.hooks import events as hookio
    from memvault.store import secretcues, secrets

    samples = [
        "sk-ant-api03-" + "A1b2C3d4E5f6G7h8" * 3,
        "ghp_" + "a1B2" * 9,
        "xoxb-1234567890",
        "AKIA" + "ABCDEFGH12345678",
        "password=hunter2hunter",
        "my token: 8fj3k29dk3k4",
        "postgres://app:s3cretpw@db/app",
        "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----",
        # said in prose: the log kept these whole while its gate asked only for "=", ":", "-----" or a long run
        "the door pin is 4821",
        "my password is sunshine",
        "IBAN DE20 4770 0160 0754 0389 92",
        "SSN 536-22-8870",
    ]
    for text in samples:
        assert secrets.scan(text), text  # each is a secret the scanner knows
        assert secretcues.may_hold(text), text  # so the gate must let it through
        assert "REDACTED" in hookio._excerpt(f"please remember, {text}"), text
    assert hookio._excerpt("  fix the   flaky test  ") == "fix the flaky test"


# ---- markers, crash recovery, concurrent sessions (real reflection in the background) -------------------


def wait_for(predicate: Any, timeout: float = 120) -> None:
    """Background jobs are detached processes: poll until they have logged what the test expects."""
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, [r for r in log_records() if r["hook"].startswith("job:")]
        time.sleep(0.1)


def jobs(name: str) -> list[dict[str, Any]]:
    return log_records(f"job:{name}")


SAID = [
    ("user", "From now on, always run ruff check before you commit anything in this repo."),
    ("assistant", "Understood: I will run `ruff check` before every commit."),
    ("user", "Never push directly to main; open a pull request instead."),
]


def conversation(path: Path, session: str) -> Path:
    """A real transcript (spotter/short.jsonl) with the user stating two preferences at the end, in its own format."""
    lines = (TRANSCRIPTS / "spotter" / "short.jsonl").read_text(encoding="utf-8").splitlines()
    template = next(json.loads(line) for line in lines if '"type":"user"' in line)
    for n, (role, text) in enumerate(SAID):
        line = {**template, "type": role, "sessionId": session, "uuid": f"{session}-{n}"}
        line["message"] = {"role": role, "content": text if role == "user" else [{"type": "text", "text": text}]}
        if role == "assistant":
            line["message"]["id"] = f"msg-{session}-{n}"
        lines.append(json.dumps(line))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_session_end_reflects_and_marks_the_session(hook_vault: Path, tmp_path: Path) -> None:
    transcript = conversation(tmp_path / "s.jsonl", "ended")
    event = {"session_id": "ended", "transcript_path": str(transcript)}
    run_hook("session_start", payload("SessionStart", source="startup", **event))
    started = time.monotonic()
    result = run_hook("session_end", payload("SessionEnd", reason="prompt_input_exit", **event))
    assert result.returncode == 0 and result.stdout == ""
    assert time.monotonic() - started < 1.5  # the host's SessionEnd budget: the reflection itself is detached
    wait_for(lambda: any(r["session"] == "ended" for r in jobs("reflect")))
    record = next(r for r in jobs("reflect") if r["session"] == "ended")
    assert record["result"] == "success" and record["written"], record
    assert runtime.marker("ended", "reflected").exists() and not runtime.marker("ended", "start").exists()
    from memvault import open_vault
    from memvault.reflect import runner

    vault = open_vault(hook_vault)
    assert runner.pending_bytes(vault, transcript) == 0
    saved = [vault.read(p).note for p in record["written"]]
    assert all(n.meta["source"] == "ended" for n in saved)
    assert any("ruff check" in n.body for n in saved) and any("pull request" in n.body for n in saved)


def test_a_crashed_session_is_recovered_by_the_idle_hook(hook_vault: Path, tmp_path: Path) -> None:
    from memvault import open_vault
    from memvault.reflect import runner

    before = {e.path for e in open_vault(hook_vault).list()}
    transcript = conversation(tmp_path / "crashed.jsonl", "crashed")
    start = payload("SessionStart", session="crashed", source="startup", transcript_path=str(transcript))
    run_hook("session_start", start)
    wait_for(lambda: len(jobs("start")) == 1)
    assert runtime.marker("crashed", "start").exists()  # fresh: not taken for a crash
    two_hours_ago = time.time() - 7200  # … then the session died without SessionEnd
    for path in (transcript, runtime.marker("crashed", "start")):
        os.utime(path, (two_hours_ago, two_hours_ago))

    other = tmp_path / "other.jsonl"
    other.write_text("")
    event = payload("Notification", session="live", transcript_path=str(other), notification_type="idle_prompt")
    event["message"] = "Claude is waiting for your input"
    assert run_hook("idle", event).stdout == ""
    wait_for(lambda: len(jobs("idle")) == 1)
    sweep = jobs("idle")[0]
    assert sweep["result"] == "success" and sweep["reflected_sessions"] == ["crashed"], sweep
    assert runtime.marker("crashed", "reflected").exists() and not runtime.marker("crashed", "start").exists()
    assert runtime.marker("live", "start").exists()  # the live session is tracked, not reflected as a crash
    vault = open_vault(hook_vault)
    assert runner.pending_bytes(vault, transcript) == 0
    captured = [e for e in vault.list() if e.path not in before]
    assert captured and all(vault.read(e.path).note.meta.get("source") == "crashed" for e in captured)


def hook_chain(tmp_path: Path, events: list[tuple[str, dict[str, Any]]]) -> str:
    """A bash line running hooks one after another, each fed its JSON from a file (as the host pipes it)."""
    steps = []
    for n, (name, data) in enumerate(events):
        path = tmp_path / f"{data['session_id']}-{n}.json"
        path.write_text(json.dumps(data))
        steps.append(" ".join(f"'{word}'" for word in [*PYTHON, f"{HOOKS / name}.py"]) + f" < '{path}'")
    return " && ".join(steps)


def test_eight_sessions_at_once_corrupt_nothing_and_duplicate_nothing(hook_vault: Path, tmp_path: Path) -> None:
    from memvault import open_vault

    before = {e.path for e in open_vault(hook_vault).list()}
    procs = []
    for n in range(8):
        transcript = conversation(tmp_path / f"t{n}.jsonl", f"par-{n}")  # the same conversation eight times
        event = {"session_id": f"par-{n}", "transcript_path": str(transcript)}
        chain = [
            ("session_start", payload("SessionStart", source="startup", **event)),
            ("user_prompt_submit", payload("UserPromptSubmit", prompt=FLAKY, **event)),
            ("stop", payload("Stop", stop_hook_active=False, **event)),
            ("user_prompt_submit", payload("UserPromptSubmit", prompt=FLAKY, **event)),
            ("session_end", payload("SessionEnd", reason="other", **event)),
        ]
        procs.append(subprocess.Popen(["bash", "-c", hook_chain(tmp_path, chain)], stdout=subprocess.DEVNULL))
    assert all(p.wait(timeout=120) == 0 for p in procs)
    wait_for(lambda: all(runtime.marker(f"par-{n}", "reflected").exists() for n in range(8)), timeout=180)
    wait_for(lambda: len(jobs("start")) == 8, timeout=180)

    hook_runs = [r for r in log_records() if not r["hook"].startswith("job:")]
    assert len(hook_runs) == 8 * 5  # one intact line per run: no interleaving, nothing lost
    assert all(r["result"] in ("success", "partial", "skipped") for r in log_records()), log_records()
    for n in range(8):
        given = runtime.injected(f"par-{n}")["recalled"]
        assert given and len(given) == len(set(given))  # the second prompt repeated nothing
    vault = open_vault(hook_vault)
    captured = [e for e in vault.list() if e.path not in before]
    bodies = [vault.read(e.path).note.body.strip() for e in captured]
    assert bodies and len(bodies) == len(set(bodies)), [e.path for e in captured]  # one copy of each entry
    assert sum("ruff check" in b for b in bodies) == 1
    assert not vault.recover()  # no half-done mutation left in the journal


def test_stale_reflection_is_warned_at_session_start_and_in_health(hook_vault: Path) -> None:
    from memvault import health, open_vault
    from memvault.reflect import runner

    vault = open_vault(hook_vault)
    now = time.time()
    assert runner.stale_warning(vault.config, now - 86400, now) is None
    assert "8 days" in (runner.stale_warning(vault.config, now - 8 * 86400, now) or "")
    runtime.write_start_marker("old-session", {})
    assert runner.stale_warning(vault.config, None, now) is None  # a new install is not stale
    old = now - 9 * 86400
    os.utime(runtime.marker("old-session", "start"), (old, old))
    warning = runner.stale_warning(vault.config, None, now)
    assert warning is not None and "7+ days" in warning  # sessions for 9 days, no reflection ever
    runtime.set_warning("stale_reflection", warning)
    message = json.loads(run_hook("session_start", payload("SessionStart", source="startup")).stdout)["systemMessage"]
    assert warning in message
    assert warning in health.check(vault).warnings
    runtime.set_warning("stale_reflection", None)
    assert warning in health.check(vault).warnings  # health works it out itself from the same facts
    runtime.marker("old-session", "start").unlink()
    assert warning not in health.check(vault).warnings


def test_an_always_load_symlink_out_of_the_vault_is_not_read(hook_vault: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside.md"
    outside.write_text("# Outside\nwords from outside the vault\n")
    (hook_vault / "MemoryVault/personal-private/_always-load/link.md").symlink_to(outside)
    result = run_hook("session_start", payload("SessionStart", source="startup"))
    assert "Core dev flow" in result.stdout and "outside the vault" not in result.stdout


def test_session_start_job_indexes_project_skills_outside_the_project_dir(hook_vault: Path, tmp_path: Path) -> None:
    project = tmp_path / "project"
    skill = project / ".claude" / "skills" / "deploy-preview"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(
        "---\nname: deploy-preview\ndescription: Deploy a preview build of the web app to staging.\n---\n\nRun make.\n",
        encoding="utf-8",
    )
    # A project module named like the stdlib: the background job must not import it (`python -m` in the project
    # directory would put it first on sys.path).
    (project / "json.py").write_text("raise SystemExit('the project shadowed the stdlib')\n", encoding="utf-8")
    result = subprocess.run(  # the host runs hooks in the project directory
        [*PYTHON, str(HOOKS / "session_start.py")],
        input=json.dumps(payload("SessionStart", source="startup", cwd=str(project))),
        capture_output=True, text=True, timeout=60, cwd=project,
    )  # fmt: skip
    assert result.returncode == 0
    wait_for(lambda: any(r["hook"] == "job:start" for r in log_records()))
    job = [r for r in log_records() if r["hook"] == "job:start"][-1]
    assert job["result"] == "success", job
    assert job["skills"] == {"created": 1}
    entry = hook_vault / "MemoryVault" / "personal-skills" / "project-deploy-preview.md"  # project scope
    assert "Deploy a preview build" in entry.read_text(encoding="utf-8")


# ---- skill entries: only on a good match --------------------------------------------------------------


def test_a_skill_entry_is_recalled_only_when_the_prompt_is_about_that_skill(hook_vault: Path) -> None:
    """Claude Code lists every skill to the model already; keyword-only, the prompt must name the skill."""
    skill = "MemoryVault/personal-skills/commit-helper.md"
    about_commits = "how should I word the commit message for my staged diff, conventional commits style?"
    result = run_hook("user_prompt_submit", payload("UserPromptSubmit", session="sk-1", prompt=about_commits))
    record = log_records("UserPromptSubmit")[-1]
    assert record["mode"] == "keyword" and record["kw_hits"] > 0
    assert skill not in result.stdout and skill not in [e["path"] for e in record["injected"]]

    named = "run the commit-helper skill on my staged diff"
    result = run_hook("user_prompt_submit", payload("UserPromptSubmit", session="sk-2", prompt=named))
    assert skill in context_of(result, "UserPromptSubmit")


def test_inspect_labels_an_entry_by_the_hook_that_gave_it(memvault_home: Path) -> None:
    """Scores of zero mean "always-load" only at SessionStart; a prompt's entry is recalled whatever its scores."""
    from click.testing import CliRunner

    from memvault.cli import cli

    always = {"path": "MemoryVault/personal-private/_always-load/dev-flow.md"}
    recalled = {"path": "MemoryVault/personal-private/fix/psycopg-ssl-eof.md", "score": 0.0, "vec": 0.0, "kw": 0.0}
    runtime.log_event({"hook": "SessionStart", "session": "lab-1", "result": "success", "injected": [always]})
    runtime.log_event({"hook": "UserPromptSubmit", "session": "lab-1", "result": "success", "injected": [recalled]})
    result = CliRunner().invoke(cli, ["inspect", "--session", "lab-1"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    start, prompt = result.output.split("UserPromptSubmit")
    assert "dev-flow.md" in start and "always-load" in start
    assert "psycopg-ssl-eof.md" in prompt and "always-load" not in prompt and "recalled" in prompt
