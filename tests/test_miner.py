"""Miners: each offline rule firing and not firing, keys, secrets and <private>, real transcripts, the LLM miner."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from memvault.reflect import miner, transcript
from memvault.reflect.miner import Candidate, MinerError
from memvault.reflect.transcript import Turn

from .conftest import TRANSCRIPTS

GITHUB_TOKEN = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"


def convo(*turns: tuple[str, str] | tuple[str, str, bool]) -> list[Turn]:
    """Turns on lines 1, 2, 3 …; a third element marks a sidechain turn."""
    out = []
    for n, t in enumerate(turns, 1):
        side = len(t) > 2 and bool(t[-1])
        out.append(Turn(t[0], t[1], n, f"u{n}", None, side))
    return out


def only(cands: list[Candidate], category: str) -> list[Candidate]:
    return [c for c in cands if c.category == category]


def everything(c: Candidate) -> str:
    return "\n".join([c.title, c.body, c.key, *c.evidence])


# ---------------------------------------------------------------- preferences


@pytest.mark.parametrize(
    ("said", "rule", "confidence"),
    [
        ("Always use pnpm instead of npm.", "explicit-always", "high"),
        ("Never commit directly to main.", "explicit-always", "high"),
        ("We should always run migrations inside a transaction.", "explicit-always", "high"),
        ("I never push on Fridays.", "explicit-always", "high"),
        ("From now on, run the linter before committing.", "from-now-on", "high"),
        ("In the future, please ask before deleting files.", "from-now-on", "high"),
        ("I prefer tabs over spaces in Makefiles.", "explicit-prefer", "high"),
        ("Remember that the staging database is read-only.", "remember", "high"),
        ("Stop adding comments to every line.", "stop-doing", "high"),
        ("Use httpx instead of requests.", "use-instead", "high"),
        ("we use uv, not pip", "use-instead", "high"),
        ("Don't ever force-push shared branches.", "explicit-dont", "high"),
        ("Don't use mocks in integration tests.", "dont", "low"),
        ("Please use ruff for formatting.", "please-use", "low"),
    ],
)
def test_explicit_preferences(said: str, rule: str, confidence: str) -> None:
    turns = convo(("assistant", "Done."), ("user", f"Thanks. {said}"), ("assistant", "Noted."))
    prefs = only(miner.mine(turns), "preference")
    assert [(p.rule, p.confidence, p.evidence) for p in prefs] == [(rule, confidence, ("L2",))]
    assert said.rstrip(".") in prefs[0].body  # the user's own words are quoted
    assert prefs[0].key.startswith("preference:") and len(prefs[0].title) <= miner.TITLE_CHARS


@pytest.mark.parametrize(
    "said",
    [
        "I always forget how the release script works.",
        "Never mind, the old one is fine.",
        "Always been like that in this repo.",
        "Should we always use pnpm?",
        "Do you always run the tests before committing?",
        "Why do you never use the helper?",
        "Remember when we fixed the flaky test?",
        "Don't stop until all tests pass.",
        "Don't commit yet.",
        "For now, use the old API.",
        "I'm not sure whether I prefer tabs.",
        "You always break the build.",
        "I don't know why it fails.",
        "Thanks, that looks good.",
        "Use the attached file",
    ],
)
def test_not_preferences(said: str) -> None:
    turns = convo(("assistant", "Here it is."), ("user", said))
    assert only(miner.mine(turns), "preference") == []


def test_corrections_need_the_agent_to_have_spoken() -> None:
    reply = "No, use the existing helper in utils instead."
    assert only(miner.mine(convo(("user", reply))), "preference") == []
    turns = convo(("user", "add a date parser"), ("assistant", "I wrote a new parse_date function."), ("user", reply))
    (pref,) = only(miner.mine(turns), "preference")
    assert (pref.rule, pref.confidence, pref.evidence) == ("correction", "high", ("L3",))
    assert "existing helper in utils" in pref.body and "I wrote a new parse_date function" in pref.body


@pytest.mark.parametrize(
    ("reply", "fires"),
    [
        ("That's wrong: the config lives in the XDG config folder.", True),
        ("Actually, put the fixtures under tests/data.", True),
        ("No thanks.", False),
        ("No worries, that's fine.", False),
        ("Actually, I think that's fine.", False),
        ("No.", False),
    ],
)
def test_correction_variants(reply: str, fires: bool) -> None:
    turns = convo(("assistant", "I put the config in the repo root."), ("user", reply))
    prefs = only(miner.mine(turns), "preference")
    assert [p.rule for p in prefs] == (["correction"] if fires else [])


def test_preferences_only_from_the_user_in_the_main_conversation() -> None:
    turns = convo(
        ("assistant", "Always use pnpm instead of npm."),
        ("user", "Always use pnpm instead of npm.", True),  # a subagent's prompt: the user does not talk there
        ("summary", "The user said: always use pnpm instead of npm."),
        ("tool_error", "Error: always use pnpm instead of npm"),
    )
    assert only(miner.mine(turns), "preference") == []


def test_ideas_only_from_the_main_conversation() -> None:
    turns = convo(
        ("user", "TODO: add retries to the uploader", True),
        ("assistant", "This is a pre-existing bug; it should be fixed separately.", True),
        ("summary", "It would be cool to build a CLI that syncs the notes."),
    )
    assert only(miner.mine(turns), "idea") == []


def test_preference_inside_code_or_quotes_is_not_the_users_instruction() -> None:
    text = "Here is the doc:\n```\nAlways use pnpm instead of npm.\n```\n> Never commit to main.\nwhat do you think"
    assert only(miner.mine(convo(("assistant", "ok"), ("user", text))), "preference") == []


def test_keys_are_stable_across_sessions_and_keep_negations() -> None:
    def key(text: str) -> str:
        (pref,) = only(miner.mine(convo(("assistant", "ok"), ("user", text))), "preference")
        return pref.key

    assert key("Always use pnpm instead of npm.") == key("always use PNPM instead of npm!")
    assert key("Please always use pnpm instead of npm") == key("Always use pnpm instead of npm.")
    assert key("Don't use mocks in integration tests.") == key("Do not use mocks in integration tests.")
    assert key("Never use mocks in integration tests.") != key("Always use mocks in integration tests.")
    assert key("Always use pnpm instead of npm.") != key("Always use npm instead of pnpm.")
    assert miner.make_key("fix", "") == "fix:untitled"


def test_keys_keep_numbers() -> None:
    def key(text: str) -> str:
        (pref,) = only(miner.mine(convo(("assistant", "ok"), ("user", text))), "preference")
        return pref.key

    assert key("Always keep the line length at 100.") != key("Always keep the line length at 120.")
    assert "100" in key("Always keep the line length at 100.")
    assert key("Always use Python 3.12 for new services.") != key("Always use Python 3.11 for new services.")
    late = "Always run the whole integration suite against the staging database with a {} second timeout."
    assert key(late.format(300)) != key(late.format(600))  # a number past the first content words still counts
    assert key(late.format(300)) == key(late.format(300).upper())
    assert miner.make_key("preference", "line length 100") != miner.make_key("preference", "line length 120")


def test_fix_keys_still_ignore_line_numbers_and_paths() -> None:
    def fix_key(error: str) -> str:
        turns = convo(
            ("tool_error", error),
            ("assistant", "The import is wrong because the module was renamed to core."),
            ("assistant", "All tests pass."),
        )
        (fix,) = only(miner.mine(turns), "fix")
        return fix.key

    one = fix_key("src/app/main.py:12: error: Module 'util' has no attribute 'load'")
    assert one == fix_key("lib/other/main.py:340: error: Module 'util' has no attribute 'load'")


# ---------------------------------------------------------------- fixes


def test_error_then_explanation_then_success_is_a_medium_fix() -> None:
    turns = convo(
        ("user", "build the assets"),
        ("tool_error", 'Exit code 1\n✘ [ERROR] Could not resolve "js/app.js"\n\n1 error'),
        ("assistant", "Let me check the build script."),
        ("assistant", "The build script expects to be run from within assets/ because the entry point is relative."),
        ("assistant", "JS build succeeds. Now let me commit."),
    )
    (fix,) = only(miner.mine(turns), "fix")
    assert (fix.rule, fix.confidence, fix.evidence) == ("error-then-fix", "medium", ("L2", "L4", "L5"))
    assert fix.title == 'Fix: Could not resolve "js/app.js"'
    assert "run from within assets/" in fix.body and "JS build succeeds" in fix.body
    assert "Exit code" not in fix.body and "Let me check" not in fix.body


def test_fix_without_a_stated_success_is_low_only_when_the_work_moves_on() -> None:
    base = [
        ("tool_error", "fatal: The current branch feature has no upstream branch."),
        ("assistant", "The branch has no upstream, so it needs to be pushed with --set-upstream."),
    ]
    assert only(miner.mine(convo(*base)), "fix") == []  # nothing after: unresolved
    moved = convo(*base, ("assistant", "Pushing now."), ("assistant", "Next task: the docs."))
    (fix,) = only(miner.mine(moved), "fix")
    assert fix.confidence == "low"


def test_no_fix_without_an_explanation_or_for_tool_mechanics() -> None:
    silent = convo(("tool_error", "Error: connection refused"), ("assistant", "Let me retry."), ("assistant", "Done."))
    assert only(miner.mine(silent), "fix") == []
    mechanics = convo(
        ("tool_error", "<tool_use_error>String to replace not found in file.</tool_use_error>"),
        ("assistant", "The file changed because the formatter ran; the string is different."),
        ("assistant", "All tests pass."),
    )
    assert only(miner.mine(mechanics), "fix") == []


def test_the_same_error_again_extends_the_episode_and_the_user_can_confirm() -> None:
    turns = convo(
        ("tool_error", "Pre-commit validation failed:\n[DIALYZER]\nThe pattern can never match"),
        ("assistant", "The issue is that the spec is wrong; it should be a record."),
        ("tool_error", "Pre-commit validation failed:\n[DIALYZER]\nThe pattern can never match"),
        ("assistant", "current_span_ctx returns a record, not {:ok, ctx}, so the match is wrong."),
        ("user", "that worked, thanks"),
    )
    (fix,) = only(miner.mine(turns), "fix")
    assert fix.confidence == "medium"
    assert fix.evidence == ("L1", "L2", "L4", "L5")
    assert "returns a record" in fix.body


def test_a_different_error_closes_the_first_episode_as_progress() -> None:
    turns = convo(
        ("tool_error", "** (RuntimeError) no :secret_key_base configuration found"),
        ("assistant", "The test config is missing the Endpoint configuration."),
        ("tool_error", "** (RuntimeError) Phoenix LiveView requires lazy_html as a test dependency."),
        ("assistant", "Need `lazy_html` dependency."),
        ("assistant", "All 12 tests pass."),
    )
    fixes = only(miner.mine(turns), "fix")
    assert [(f.evidence[0], f.confidence) for f in fixes] == [("L1", "low"), ("L3", "medium")]
    assert fixes[0].key != fixes[1].key


def test_agent_named_problem_and_user_reported_problem() -> None:
    agent = convo(
        ("assistant", "I see the issue. The do block is passed as an argument but with_span expects a function."),
        ("assistant", "Rewrote with_span as a macro."),
        ("assistant", "All tests pass."),
    )
    (fix,) = only(miner.mine(agent), "fix")
    assert fix.rule == "problem-then-fix" and fix.title.startswith("Fix: The do block is passed")
    user = convo(
        ("user", "mix phx.server fails with a port error"),
        ("assistant", "Port 4000 is taken because another server is running; it needs to be stopped first."),
        ("assistant", "The server now works."),
    )
    (fix2,) = only(miner.mine(user), "fix")
    assert fix2.rule == "reported-problem-then-fix" and fix2.confidence == "medium"


def test_sidechain_errors_are_not_explained_by_the_main_conversation() -> None:
    turns = convo(
        ("tool_error", "Error: EACCES permission denied /var/run/x", True),
        ("assistant", "The socket needs to be in the runtime dir because /var/run is root-only."),
        ("assistant", "All tests pass."),
    )
    assert only(miner.mine(turns), "fix") == []


# ---------------------------------------------------------------- workflows


def test_confirmed_multi_step_answer_is_a_workflow() -> None:
    turns = convo(
        ("user", "Release version 2.1 to PyPI"),
        ("assistant", "Bumping the version in pyproject.toml."),
        ("assistant", "Built the wheel with python -m build and uploaded it with twine."),
        ("user", "Perfect, thanks!"),
    )
    (wf,) = only(miner.mine(turns), "workflow")
    assert (wf.rule, wf.confidence, wf.evidence) == ("confirmed-workflow", "medium", ("L1", "L3", "L4"))
    assert "Release version 2.1 to PyPI" in wf.body and "twine" in wf.body and "Perfect, thanks!" in wf.body


@pytest.mark.parametrize("reply", ["Great, but the upload still fails.", "thanks", "Perfect?", "great question"])
def test_not_a_confirmation(reply: str) -> None:
    turns = convo(("user", "Release it"), ("assistant", "Step one."), ("assistant", "Step two."), ("user", reply))
    assert only(miner.mine(turns), "workflow") == []


def test_a_one_step_answer_is_not_a_workflow() -> None:
    turns = convo(("user", "what is 2+2"), ("assistant", "4"), ("user", "Perfect"))
    assert only(miner.mine(turns), "workflow") == []


# ---------------------------------------------------------------- ideas


@pytest.mark.parametrize(
    ("said", "kind", "rule"),
    [
        ("TODO: add retries to the uploader", "follow-up", "follow-up"),
        ("We should handle the Windows paths later.", "follow-up", "follow-up"),
        ("We should also rename the module.", "follow-up", "we-should-also"),
        ("It would be cool to build a CLI that syncs the notes to a phone.", "project", "project-idea"),
        ("We should investigate whether WAL mode helps the writer.", "research", "research"),
        ("Caching the embeddings is worth looking into.", "research", "research"),
    ],
)
def test_user_ideas(said: str, kind: str, rule: str) -> None:
    (idea,) = only(miner.mine(convo(("assistant", "ok"), ("user", said))), "idea")
    assert (idea.idea_kind, idea.rule, idea.evidence) == (kind, rule, ("L2",))
    assert said.rstrip(".") in idea.body


@pytest.mark.parametrize(
    "said", ["Look into why the build fails.", "Should we look into caching?", "Investigate the crash in the parser."]
)
def test_immediate_requests_and_questions_are_not_ideas(said: str) -> None:
    assert only(miner.mine(convo(("assistant", "ok"), ("user", said))), "idea") == []


def test_agent_parks_a_found_bug_once_however_often_it_mentions_it() -> None:
    turns = convo(
        ("user", "add the tests"),
        (
            "assistant",
            "The agent_id is dropped by load_session_messages. This is an existing issue, not something I "
            "should fix in a test task.",
        ),
        ("assistant", "Now let me file a bead for the discovered bug."),
        ("assistant", "Filed. Let me also create a follow-up issue for the agent_id bug."),
        ("user", "ok"),
        ("assistant", "This is out of scope for this change as well."),
    )
    ideas = only(miner.mine(turns), "idea")
    assert [(i.rule, i.confidence, i.evidence) for i in ideas] == [
        ("agent-follow-up", "low", ("L2", "L3", "L4")),
        ("agent-follow-up", "low", ("L6",)),
    ]
    assert "load_session_messages" in ideas[0].body


# ---------------------------------------------------------------- privacy, secrets, noise


def test_secrets_never_reach_a_candidate() -> None:
    turns = convo(
        ("assistant", "ok"),
        ("user", f"Always use the deploy token {GITHUB_TOKEN} for the registry pushes in CI."),
        ("tool_error", f"fatal: Authentication failed for https://x:{GITHUB_TOKEN}@github.com/a/b"),
        ("assistant", "The token expired because it was rotated; it needs to be the new one from the vault."),
        ("assistant", "Push succeeded."),
        ("user", f"Remember: the registry token is {GITHUB_TOKEN}"),
    )
    cands = miner.mine(turns)
    assert {c.category for c in cands} == {"preference", "fix"}
    for c in cands:
        assert GITHUB_TOKEN not in everything(c) and "a1B2c3D4" not in everything(c)
    pref = only(cands, "preference")
    assert len(pref) == 1 and "[REDACTED:github_token]" in pref[0].body  # "the token is <token>" was dropped


def test_keys_are_built_from_redacted_text() -> None:
    aws = "AKIA" + "QWERTYUIOPASDFGH"
    password = "s3cretPassw0rd"
    turns = convo(
        ("assistant", "I used the default credentials for the deploy user."),
        ("user", f"No, use the access key {aws} for the deploy user and rotate it monthly."),  # a correction
        ("tool_error", f"psql: error: connection to postgres://app:{password}@db.internal:5432/app failed: timeout"),
        ("assistant", "The database is only reachable from the VPN because the security group blocks it."),
        ("assistant", "All tests pass."),
        ("user", f"Always export GH_TOKEN={GITHUB_TOKEN} before running the release script in CI."),
    )
    cands = miner.mine(turns)
    assert {c.rule for c in cands} == {"correction", "error-then-fix", "explicit-always"}
    for c in cands:
        for secret in (aws, password, GITHUB_TOKEN, GITHUB_TOKEN[4:20]):
            assert secret.lower() not in everything(c).lower(), (c.rule, c.key)
    # a key depends on the words around a secret, not on the secret: a rotated token gives the same key
    other = "ghp_" + "Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2"
    said = "Always export GH_TOKEN={} before running the release script in CI."
    assert miner.make_key("preference", said.format(GITHUB_TOKEN)) == miner.make_key("preference", said.format(other))
    assert "redacted" not in miner.make_key("preference", said.format(GITHUB_TOKEN))
    assert miner.make_key("idea", f"use <private>{aws}</private> later") == miner.make_key("idea", "use later")


def test_private_spans_never_reach_a_candidate() -> None:
    turns = convo(
        ("assistant", "ok"),
        ("user", "Always deploy with <private>codename Bluebird</private> the blue-green script."),
        ("user", "From now on <private>ask Dana"),  # an unclosed span runs to the end: nothing left to keep
    )
    cands = miner.mine(turns)
    assert all("Bluebird" not in everything(c) and "Dana" not in everything(c) for c in cands)
    assert [c.rule for c in cands] == ["explicit-always"]


def test_bodies_carry_no_wrapper_xml() -> None:
    turns = convo(
        ("tool_error", "<tool_use_error>Error: Cannot find module 'vite'</tool_use_error>"),
        ("assistant", "The dependency is missing because node_modules was not installed."),
        ("assistant", "Build succeeded."),
    )
    (fix,) = only(miner.mine(turns), "fix")
    assert "<tool_use_error>" not in fix.body and "Cannot find module 'vite'" in fix.body


def test_empty_and_deterministic() -> None:
    assert miner.mine([]) == []
    turns = transcript.read(TRANSCRIPTS / "spotter" / "ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl").turns
    assert miner.mine(turns) == miner.mine(list(turns))


# ---------------------------------------------------------------- real transcripts


@pytest.mark.parametrize(
    "path", sorted(TRANSCRIPTS.rglob("*.jsonl")), ids=lambda p: p.relative_to(TRANSCRIPTS).as_posix()
)
def test_real_transcripts_give_well_formed_candidates(path: Path) -> None:
    turns = transcript.read(path).turns
    lines = {t.line for t in turns}
    side_lines = {t.line for t in turns if t.sidechain}
    for c in miner.mine(turns):
        assert c.category in miner.CATEGORIES and c.confidence in miner.CONFIDENCES
        assert c.evidence and all(e.startswith("L") and int(e[1:]) in lines for e in c.evidence)
        assert c.key.startswith(f"{c.category}:") and c.key == c.key.lower()
        assert (c.idea_kind in miner.IDEA_KINDS) if c.category == "idea" else c.idea_kind is None
        assert 0 < len(c.title) <= miner.TITLE_CHARS and c.body.strip()
        assert "<system-reminder>" not in c.body and "<command-" not in c.body
        if c.category == "preference":
            assert not {int(e[1:]) for e in c.evidence} & side_lines


def test_real_session_fixes() -> None:
    turns = transcript.read(TRANSCRIPTS / "spotter" / "8463c716-a2ea-4c14-9efa-87158ebd9f20.jsonl").turns
    fixes = {c.evidence[0]: c for c in only(miner.mine(turns), "fix")}
    esbuild = fixes["L791"]
    assert esbuild.confidence == "medium" and "assets/" in esbuild.body and "succeeds" in esbuild.body
    assert "L69" not in fixes  # "file too large to read" is how the agent used a tool, not a fix
    assert not only(miner.mine(turns), "preference")  # this user only gave task instructions


# ---------------------------------------------------------------- the LLM miner


def fake_claude(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, script: str) -> Path:
    """A `claude` on PATH that records its argv, stdin and MEMVAULT_ENABLED, then runs `script`."""
    bindir = tmp_path / "bin"
    bindir.mkdir(exist_ok=True)
    log = tmp_path / "claude-call.json"
    exe = bindir / "claude"
    exe.write_text(
        f"#!{sys.executable}\n"
        "import json, os, sys, time\n"
        "data = sys.stdin.read()\n"
        f"open({str(log)!r}, 'w').write(json.dumps({{'argv': sys.argv[1:], 'stdin': data,"
        " 'enabled': os.environ.get('MEMVAULT_ENABLED')}))\n" + script,
        encoding="utf-8",
    )
    exe.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    return log


def envelope(result: object, **extra: object) -> str:
    text = result if isinstance(result, str) else json.dumps(result)
    return json.dumps({"type": "result", "subtype": "success", "is_error": False, "result": text, **extra})


LLM_TURNS = convo(
    ("user", "Always use pnpm instead of npm. <private>internal codename</private>"),
    ("assistant", "Switched the scripts to pnpm."),
    ("user", "secret subagent prompt", True),
)
GOOD = {
    "candidates": [
        {
            "category": "preference",
            "title": "Use pnpm, not npm",
            "body": "> Always use pnpm instead of npm.",
            "evidence": ["L1"],
            "confidence": "high",
            "rule": "explicit-always",
            "idea_kind": None,
        },
        {
            "category": "idea",
            "title": "Try corepack",
            "body": f"Maybe pin pnpm with corepack; token {GITHUB_TOKEN} was mentioned.",
            "evidence": ["L2"],
            "confidence": "low",
            "rule": "follow-up",
            "idea_kind": "follow-up",
        },
    ]
}


def test_llm_miner_valid_answer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = fake_claude(tmp_path, monkeypatch, f"print({envelope(GOOD)!r})\n")
    cands = miner.mine_llm(LLM_TURNS)
    assert [(c.category, c.rule, c.confidence, c.evidence) for c in cands] == [
        ("preference", "llm:explicit-always", "high", ("L1",)),
        ("idea", "llm:follow-up", "low", ("L2",)),
    ]
    assert cands[0].key == miner.make_key("preference", "Use pnpm, not npm")
    assert GITHUB_TOKEN not in everything(cands[1]) and "[REDACTED:github_token]" in cands[1].body
    call = json.loads(log.read_text())
    assert call["argv"][0] == "-p" and call["argv"][-2:] == ["--output-format", "json"]
    assert call["enabled"] == "0"  # the child session does not run memvault's own hooks
    assert "L1 [user]: Always use pnpm" in call["stdin"] and "L2 [assistant]" in call["stdin"]
    assert "internal codename" not in call["stdin"] and "secret subagent prompt" not in call["stdin"]
    assert miner.run(LLM_TURNS, miner="claude") == (cands, "claude")


def test_llm_miner_accepts_a_fenced_result(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fenced = "```json\n" + json.dumps({"candidates": []}) + "\n```"
    fake_claude(tmp_path, monkeypatch, f"print({envelope(fenced)!r})\n")
    assert miner.mine_llm(LLM_TURNS) == []


def _bad(**change: object) -> dict:
    item = dict(GOOD["candidates"][0])
    item.update(change)
    return {"candidates": [item]}


@pytest.mark.parametrize(
    ("script", "message"),
    [
        ("print('this is not json')\n", "not JSON"),
        ("print('[1, 2]')\n", "not a JSON object"),
        ("sys.exit(1)\n", "exited with 1"),
        ("time.sleep(10)\n", "did not answer"),
        (f"print({envelope('no json here')!r})\n", "result is not JSON"),
        (f"print({envelope({'items': []})!r})\n", "must be"),
        (f"print({envelope(GOOD, is_error=True)!r})\n", "reported an error"),
        (f"print({json.dumps({'type': 'result', 'subtype': 'success'})!r})\n", "no 'result'"),
        (f"print({envelope(_bad(category='opinion'))!r})\n", "unknown category"),
        (f"print({envelope(_bad(confidence='certain'))!r})\n", "unknown confidence"),
        (f"print({envelope(_bad(evidence=['L99']))!r})\n", "not a turn"),
        (f"print({envelope(_bad(evidence=['L3']))!r})\n", "not a turn"),  # a sidechain turn the LLM never saw
        (f"print({envelope(_bad(evidence=[]))!r})\n", "non-empty list"),
        (f"print({envelope(_bad(title=''))!r})\n", "title"),
        (f"print({envelope(_bad(extra='x'))!r})\n", "keys"),
        (f"print({envelope(_bad(category='idea'))!r})\n", "idea_kind"),
        (f"print({envelope(_bad(idea_kind='research'))!r})\n", "only for ideas"),
    ],
)
def test_llm_miner_failures_raise_and_run_falls_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, script: str, message: str
) -> None:
    fake_claude(tmp_path, monkeypatch, script)
    with pytest.raises(MinerError, match=message):
        miner.mine_llm(LLM_TURNS, timeout=1.0 if "sleep" in script else 30.0)
    if "sleep" in script:
        return  # the fallback path is the same for every failure; no need to wait again
    errors: list[str] = []
    cands, used = miner.run(LLM_TURNS, miner="claude", errors=errors)
    assert used == "offline" and cands == miner.mine(LLM_TURNS)
    assert errors and message.split()[0] in errors[0]


def test_llm_miner_not_installed(tmp_path: Path) -> None:
    with pytest.raises(MinerError, match="not installed"):
        miner.mine_llm(LLM_TURNS, command=str(tmp_path / "no-such-claude"))


def test_run_defaults_to_offline_and_rejects_unknown_miners(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = fake_claude(tmp_path, monkeypatch, "sys.exit(1)\n")
    assert miner.run(LLM_TURNS) == (miner.mine(LLM_TURNS), "offline")
    assert not log.exists()  # the LLM is never called unless asked for
    with pytest.raises(ValueError, match="unknown miner"):
        miner.run(LLM_TURNS, miner="gpt")
