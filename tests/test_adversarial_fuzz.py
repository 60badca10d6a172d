"""Property-based fuzzing (hypothesis) of hook payloads, frontmatter and transcript lines.

Hooks: any payload gives exit 0, nothing or one well-formed JSON object on stdout, one log line that
is not an error, and background jobs the job runner can parse. Frontmatter: the line-level reading of
`private` never says "not private" where YAML says private, and a note renders back byte for byte.
Transcripts: no line stops the reader, every line is accounted for, reading in pieces gives what
reading at once gives, and reflection never raises.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from memvault import runtime
from memvault.hooks import events, jobs
from memvault.reflect import transcript
from memvault.store import notes, privacy

from .adversarial import say, scale
from .test_hooks import EVENTS, HOOKS

pytestmark = pytest.mark.adversarial
FUZZ = settings(
    max_examples=scale(150, 1000), deadline=None, derandomize=False,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large],
)  # fmt: skip
COUNTS: dict[str, int] = {}

# ---- strategies ------------------------------------------------------------------------------------------

text = st.text(alphabet=st.characters(codec="utf-8"), max_size=300) | st.sampled_from(
    ["", " ", "-x", "--session", "/", "../../etc/passwd", "<private>secret</private>", "\ud83d", "a" * 5000,
     "how do I fix a flaky test that fails only sometimes on CI?", "/memvault", "{}", "\x00", "C:\\\\x"]
)  # fmt: skip
json_leaf = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | text
json_value = st.recursive(
    json_leaf, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(text, inner, max_size=4), max_leaves=12
)
KEYS = ["session_id", "transcript_path", "cwd", "hook_event_name", "prompt", "source", "reason",
        "notification_type", "message", "stop_hook_active", "permission_mode"]  # fmt: skip
payloads = st.dictionaries(st.sampled_from(KEYS), json_value, max_size=8) | st.dictionaries(
    text, json_value, max_size=3
)


def raw_payload(data: Any) -> str:
    return json.dumps(data)


# ---- hooks -----------------------------------------------------------------------------------------------


@pytest.fixture
def fuzz_vault(vault_dir: Path, memvault_home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The example vault, keyword-indexed, no embedding service; background jobs recorded, not started."""
    memvault_home.mkdir(parents=True, exist_ok=True)
    (memvault_home / "config.yaml").write_text(
        f"vault:\n  root: {vault_dir}\nembedding:\n  warm_service: false\nrecall:\n  prompt_budget_ms: 5000\n"
    )
    from memvault import open_vault

    open_vault(vault_dir).reindex(vectors="none")
    spawned: list[list[str]] = []
    monkeypatch.setattr(events, "_background", lambda *args: spawned.append(list(args)))
    monkeypatch.setattr(events, "_SPAWNED", spawned, raising=False)
    return vault_dir


def _log_size() -> dict[str, int]:
    folder = runtime.log_dir()
    return {p.name: p.stat().st_size for p in folder.glob("hooks-*.jsonl")} if folder.is_dir() else {}


def _new_records(before: dict[str, int]) -> list[dict[str, Any]]:
    """The log lines written since `before` (reading only the new bytes: the log grows with every example)."""
    out = []
    for path in sorted(runtime.log_dir().glob("hooks-*.jsonl")):
        with path.open("rb") as handle:
            handle.seek(before.get(path.name, 0))
            out += [json.loads(line) for line in handle.read().splitlines() if line.strip()]
    return out


def job_args_parse(args: list[str]) -> None:
    """What a hook schedules must be read back exactly by the job runner (a session id may start with '-')."""
    import argparse

    parser = argparse.ArgumentParser(exit_on_error=False)
    parser.add_argument("job", choices=("start", "reflect", "idle"))
    for option in ("--session", "--transcript", "--project"):
        parser.add_argument(option)
    parser.add_argument("--final", action="store_true")
    parsed = parser.parse_args(args)
    for option in ("session", "transcript", "project"):
        given_value = next((a.split("=", 1)[1] for a in args if a.startswith(f"--{option}=")), None)
        assert getattr(parsed, option) == given_value, (args, parsed)
    assert jobs.main.__module__  # the real runner module is importable


@pytest.mark.parametrize("event", sorted(set(EVENTS.values())))
def test_any_payload_exits_0_prints_valid_json_and_logs_one_line(fuzz_vault: Path, event: str) -> None:
    @FUZZ
    @given(payload=payloads | st.builds(raw_payload, payloads))
    @example(payload={"session_id": "\ud83d", "transcript_path": "\udcff", "prompt": "a\ud800b"})  # found once
    def run(payload: Any) -> None:
        stdin = payload if isinstance(payload, str) else json.dumps(payload)
        out = io.StringIO()
        before = _log_size()
        assert events.main(event, io.StringIO(stdin), out) == 0
        printed = out.getvalue()
        if printed:
            assert printed.endswith("\n") and printed.count("\n") == 1
            data = json.loads(printed)
            assert isinstance(data, dict) and set(data) <= {"hookSpecificOutput", "systemMessage"}
            assert event not in ("Stop", "SessionEnd", "Notification")  # would continue the conversation
        records = _new_records(before)
        assert len(records) == 1, records
        assert records[-1]["result"] != "error", records[-1]
        for args in events._SPAWNED:  # type: ignore[attr-defined]
            job_args_parse(args)
        events._SPAWNED.clear()  # type: ignore[attr-defined]
        COUNTS[event] = COUNTS.get(event, 0) + 1

    run()
    say(f"hook payloads fuzzed for {event}: {COUNTS.get(event, 0)}")


@pytest.mark.parametrize("name", sorted(EVENTS))
def test_random_bytes_through_the_real_hook_processes(fuzz_vault: Path, name: str) -> None:
    import random

    rng = random.Random(f"{name}-{os.getpid()}")  # noqa: S311 - test data, not cryptography
    count = scale(4, 40)
    for n in range(count):
        size = rng.choice([0, 1, 16, 200, 5000])
        data = bytes(rng.randrange(256) for _ in range(size))
        if n % 2:  # JSON with a few bad bytes inside a string
            data = b'{"session_id": "s", "prompt": "flaky test ' + data[:200].replace(b'"', b"") + b' CI"}'
        env = {**os.environ, "MEMVAULT_EMBEDDING_WARM_SERVICE": "false"}
        done = subprocess.run([sys.executable, str(HOOKS / f"{name}.py")], input=data, capture_output=True, env=env,
                              timeout=60)  # fmt: skip
        assert done.returncode == 0 and b"Traceback" not in done.stderr, done.stderr
        if done.stdout.strip():
            assert set(json.loads(done.stdout)) <= {"hookSpecificOutput", "systemMessage"}
    say(f"random byte payloads through the real {name} hook: {count}")


# ---- frontmatter ------------------------------------------------------------------------------------------

PRIVATE_SPELLINGS = ["true", "True", "TRUE", "yes", "Yes", "on", "1", "'true'", '"yes"', "false", "no", "No", "off",
                     "0", "''", "~", "null", "", "[]", "[a]", "maybe", "|\n  yes", "'no'", "\"false\""]  # fmt: skip
scalar = st.one_of(
    st.integers(), st.booleans(), st.none(), st.text(max_size=30), st.lists(st.text(max_size=8), max_size=3)
)


@FUZZ
@given(
    private=st.sampled_from(PRIVATE_SPELLINGS),
    comment=st.sampled_from(["", "  # note", " #x", "  # private: yes"]),
    others=st.dictionaries(st.text(alphabet="abcdefghij_", min_size=1, max_size=8), scalar, max_size=5),
    position=st.integers(0, 5),
    flow=st.booleans(),
)
@example(private="", comment="", others={"__": None, "_": [""]}, position=2, flow=False)  # found once: `private:\n- ''`
def test_the_line_reading_of_private_never_lets_through_what_yaml_keeps_private(
    private: str, comment: str, others: dict[str, Any], position: int, flow: bool
) -> None:
    body = yaml.safe_dump(others, default_flow_style=flow, sort_keys=False) if others else ""
    lines = [ln for ln in body.splitlines() if ln.strip() and ln.strip() != "{}"]
    key_line = f"private: {private}{comment if not private.startswith('|') else ''}"
    lines.insert(min(position, len(lines)), key_line)
    raw = "\n".join(lines) + "\n"
    try:
        meta = yaml.safe_load(raw)
    except yaml.YAMLError:
        meta = None
    line_level = privacy.frontmatter_says_private(raw)
    if isinstance(meta, dict) and privacy.is_private_value(meta.get("private")):
        assert line_level, raw  # fail closed: never "not private" where YAML says private
    note = notes.parse(f"---\n{raw}---\n# Title\nbody\n")
    assert privacy.note_is_private(note.meta, note.frontmatter) == line_level or line_level
    COUNTS["frontmatter"] = COUNTS.get("frontmatter", 0) + 1


@FUZZ
@given(st.text(max_size=400))
def test_any_note_text_renders_back_byte_for_byte(raw: str) -> None:
    for candidate in (raw, "---\n" + raw, "---\n" + raw + "\n---\n" + raw):
        assert notes.dump(notes.parse(candidate)) == candidate
        title = notes.title_of(notes.parse(candidate), "stem")
        assert "<private>" not in title.lower() and title.strip() == title
    COUNTS["notes"] = COUNTS.get("notes", 0) + 1


def test_frontmatter_counts() -> None:
    say(f"frontmatter examples: private spellings {COUNTS.get('frontmatter', 0)}, note round trips"
        f" {COUNTS.get('notes', 0)}")  # fmt: skip


# ---- transcript lines -------------------------------------------------------------------------------------

ROLE = st.sampled_from(["user", "assistant", "summary", "attachment", "system", None, 5])
CONTENT = st.one_of(
    text,
    st.lists(st.fixed_dictionaries({"type": st.sampled_from(["text", "tool_result", "tool_use", "thinking", "x"]),
                                     "text": text, "content": json_value, "is_error": st.booleans()}), max_size=3),
    json_value,
)  # fmt: skip
LINE_OBJ = st.fixed_dictionaries(
    {"type": ROLE, "message": st.fixed_dictionaries({"role": ROLE, "content": CONTENT, "id": st.text(max_size=4)})},
    optional={"isMeta": st.booleans(), "isSidechain": st.booleans(), "sessionId": text, "uuid": text,
              "timestamp": text, "isCompactSummary": st.booleans(), "summary": text},
)  # fmt: skip
DEEP = b'{"type":"user","message":' + b"[" * 3000 + b"]" * 3000 + b"}"
SPECIAL_LINES = [b"", b"   ", b"not json", b"[1,2]", b"{", DEEP, b"\xff\xfe\x00", b"\xef\xbb\xbf{}",
                 b'{"type":"user","message":{"role":"user","content":"always \\ud83d use uv"}}']  # fmt: skip
line_bytes = st.one_of(
    LINE_OBJ.map(lambda o: json.dumps(o).encode()),
    st.sampled_from(SPECIAL_LINES),
    st.binary(max_size=80).map(lambda b: b.replace(b"\n", b" ")),
)


@FUZZ
@given(lines=st.lists(line_bytes, max_size=12), cuts=st.lists(st.integers(1, 4000), max_size=4),
       bom=st.booleans(), final_newline=st.booleans())  # fmt: skip
def test_no_line_stops_the_reader_and_pieces_read_like_the_whole(
    tmp_path_factory: pytest.TempPathFactory, lines: list[bytes], cuts: list[int], bom: bool, final_newline: bool
) -> None:
    path = tmp_path_factory.mktemp("t") / "s.jsonl"
    data = (b"\xef\xbb\xbf" if bom else b"") + b"\n".join(lines) + (b"\n" if final_newline else b"")
    path.write_bytes(data)
    whole = transcript.read(path)
    assert whole.parsed + sum(whole.skipped.values()) == whole.lines
    assert whole.cursor.offset + whole.pending == len(data)
    for turn in whole.turns:
        turn.text.encode("utf-8")  # always valid Unicode
    # the same file read in pieces, as a growing transcript is
    cursor, texts = transcript.Cursor(), []
    for cut in sorted(set(cuts)):
        read = transcript.read(path, cursor, max_bytes=cut)
        texts += [(t.line, t.role) for t in read.turns]
        cursor = read.cursor
    while True:
        read = transcript.read(path, cursor, max_bytes=97)
        texts += [(t.line, t.role) for t in read.turns]
        if read.cursor == cursor:
            break
        cursor = read.cursor
    assert cursor == whole.cursor
    assert {line for line, _ in texts} >= {t.line for t in whole.turns if t.role != "assistant"}
    COUNTS["transcripts"] = COUNTS.get("transcripts", 0) + 1


def test_reflection_never_raises_on_fuzzed_transcripts(vault_dir: Path, tmp_path: Path, monkeypatch) -> None:
    from memvault import open_vault
    from memvault.reflect import runner

    monkeypatch.setattr(runner, "WAIT_SERVICE_S", 0.0)
    vault = open_vault(vault_dir)
    seen = {"n": 0}

    @settings(max_examples=scale(15, 200), deadline=None, suppress_health_check=list(HealthCheck))
    @given(lines=st.lists(line_bytes, min_size=1, max_size=8))
    def run(lines: list[bytes]) -> None:
        seen["n"] += 1
        path = tmp_path / f"fuzz-{seen['n']}.jsonl"
        said = json.dumps({"type": "user", "message": {"role": "user", "content": "From now on always use uv."}})
        path.write_bytes(b"\n".join([*lines, said.encode()]) + b"\n")
        runner.reflect_transcript(vault, path, final=True)
        assert runner.pending_bytes(vault, path) == 0

    run()
    say(f"transcript line lists read: {COUNTS.get('transcripts', 0)}; fuzzed transcripts reflected: {seen['n']}")
